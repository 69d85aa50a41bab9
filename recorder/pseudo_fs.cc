#include "pseudo_fs.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "fsrr.h"

namespace fsrr::recorder {
namespace {

struct pseudo_type {
  uint32_t magic;         // s_magic (linux/magic.h)
  std::string_view name;  // the type /proc/self/mountinfo shows
};

constexpr pseudo_type pseudo_types[] = {
    {0x9fa0, "proc"},
    {0x62656572, "sysfs"},
    {0x27e0eb, "cgroup"},
    {0x63677270, "cgroup2"},
    {0x64626720, "debugfs"},
    {0x74726163, "tracefs"},
    {0x1cd1, "devpts"},
    {0x73636673, "securityfs"},
    {0xcafe4a11, "bpf"},
    {0x50495045, "pipefs"},
    {0x534f434b, "sockfs"},
    {0x09041934, "anon_inodefs"},
    {0x6e736673, "nsfs"},
    {0x6165676c, "pstore"},
    {0xde5e81e4, "efivarfs"},
    {0x62656570, "configfs"},
    {0x65735543, "fusectl"},
    {0x19800202, "mqueue"},
    {0x42494e4d, "binfmt_misc"},
    {0xf97cff8c, "selinuxfs"},
    {0x43415d53, "smackfs"},
    {0x5a3c69f0, "apparmorfs"},
    {0x50494446, "pidfs"},
    {0x444d4142, "dmabuf"},
    {0x5345434d, "secretmem"},
    {0x07655821, "resctrl"},
};

constexpr auto magics = [] {
  std::array<uint32_t, std::size(pseudo_types)> m{};
  for (size_t i = 0; i < m.size(); ++i) m[i] = pseudo_types[i].magic;
  return m;
}();
static_assert(magics.size() < FSRR_PSEUDO_FS, "the BPF side's list is 0-terminated");

bool pseudo_type_name(std::string_view name) {
  return std::any_of(std::begin(pseudo_types), std::end(pseudo_types),
                     [&](const pseudo_type& t) { return t.name == name; });
}

// mountinfo escapes blanks and backslashes in paths as \ooo.
std::string unescape(std::string_view s) {
  const auto octal = [&](size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '7'; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

bool pseudo_fs(uint64_t magic) {
  return std::find(magics.begin(), magics.end(), magic) != magics.end();
}

std::span<const uint32_t> pseudo_fs_magics() {
  return magics;
}

mount_table mount_table::of(const std::string& mountinfo) {
  mount_table t;
  std::ifstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount_point options [optional...] - type source options
    std::istringstream fields(line);
    std::string id, parent, dev, root, mount_point, word;
    fields >> id >> parent >> dev >> root >> mount_point;
    while (fields >> word && word != "-") {
    }
    std::string type;
    if (!(fields >> type)) continue;
    t.add(unescape(mount_point), type);
    unsigned major = 0, minor = 0;
    if (pseudo_type_name(type) && std::sscanf(dev.c_str(), "%u:%u", &major, &minor) == 2)
      t.pseudo_devs_.insert(makedev(major, minor));
  }
  return t;
}

void mount_table::add(std::string_view mount_point, std::string_view fs_type) {
  uint32_t n = 0;
  size_t pos = 0;
  while (pos < mount_point.size()) {
    size_t slash = mount_point.find('/', pos);
    if (slash == std::string_view::npos) slash = mount_point.size();
    const std::string name(mount_point.substr(pos, slash - pos));
    pos = slash + 1;
    if (name.empty() || name == ".") continue;
    auto [it, added] = nodes_[n].children.try_emplace(name, static_cast<uint32_t>(nodes_.size()));
    if (added) nodes_.emplace_back();
    n = it->second;
  }
  nodes_[n].pseudo = pseudo_type_name(fs_type) ? 1 : 0;
  node_of_.clear();  // cached answers may change
  class_of_.clear();
}

bool mount_table::pseudo(const path_table& paths, path_id p) {
  if (p == no_id) return false;
  if (p >= class_of_.size() || !class_of_[p]) classify(paths, p);
  return class_of_[p] == 2;
}

void mount_table::classify(const path_table& paths, path_id p) {
  std::vector<path_id> chain;  // p and its ancestors not classified yet, leaf first
  path_id top = p;
  for (path_id q = p;; q = paths.parent(q)) {
    if (q < class_of_.size() && class_of_[q]) break;
    chain.push_back(q);
    top = std::max(top, q);
    if (paths.parent(q) == q) break;  // a top: its root's "/"
  }
  if (top >= class_of_.size()) {
    class_of_.resize(top + 1024, 0);
    node_of_.resize(top + 1024, no_node);
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const path_id q = *it;
    if (paths.parent(q) == q) {
      node_of_[q] = 0;
      class_of_[q] = nodes_[0].pseudo == 1 ? 2 : 1;
      continue;
    }
    const path_id up = paths.parent(q);
    int32_t n = no_node;
    if (node_of_[up] != no_node) {
      const auto& children = nodes_[static_cast<size_t>(node_of_[up])].children;
      if (auto c = children.find(std::string(paths.name(q))); c != children.end())
        n = static_cast<int32_t>(c->second);
    }
    node_of_[q] = n;
    class_of_[q] = n != no_node && nodes_[static_cast<size_t>(n)].pseudo >= 0
                       ? static_cast<uint8_t>(1 + nodes_[static_cast<size_t>(n)].pseudo)
                       : class_of_[up];
  }
}

}  // namespace fsrr::recorder
