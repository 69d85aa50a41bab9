#include "path_table.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <fmt/format.h>

namespace fsrr::recorder {
namespace {

std::string fd_path(int fd) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

path_table::path_table(trace_writer& w) : w_(w) {
  nodes_.resize(64);
  nodes_[root_path].top = root_path;
}

path_table::node& path_table::at(path_id id) {
  if (id >= nodes_.size()) nodes_.resize(id + 1);
  return nodes_[id];
}

path_table::~path_table() = default;

namespace {

// openat2 beneath a root: EAGAIN means a rename or mount anywhere raced the walk (the kernel
// does not retry RESOLVE_IN_ROOT walks itself); taken as an answer, it made names lexical.
int open_in_root(int root, const char* rel, const open_how& how) {
  for (int tries = 0;; ++tries) {
    const long fd = ::syscall(SYS_openat2, root, rel, &how, sizeof how);
    if (fd >= 0 || (errno != EAGAIN && errno != EINTR) || tries == 64) return static_cast<int>(fd);
  }
}

// Whether `path` (beneath `root`, as the root's processes see it) is the object `st` is of.
bool same_object(int root, const std::string& path, const struct stat& st) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const char* rel = path.c_str() + (!path.empty() && path[0] == '/');
  const int fd = open_in_root(root, *rel ? rel : ".", how);  // "" or "/": the root itself
  if (fd < 0) return false;
  struct stat now {};
  const bool same = ::fstat(fd, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino;
  ::close(fd);
  return same;
}

}  // namespace

void path_table::add_top(path_id top, int root_fd) {
  node& n = at(top);
  n.parent = no_id;
  n.top = top;
  roots_[top] = {root_fd, root_fd >= 0 ? fd_path(root_fd) : std::string()};
}

path_id path_table::note(path_id id, path_id parent, std::string_view name) {
  node& n = at(id);
  if (n.parent == no_id && n.top != id) {
    n.parent = parent;
    n.top = top(parent);
    n.name = names_.add(name.substr(0, PATH_MAX));  // no syscall resolves a longer one
  }
  return id;
}

int path_table::open(path_id p, int flags) const {
  const auto root = roots_.find(top(p));
  if (root == roots_.end() || root->second.fd < 0) {
    errno = ENOENT;
    return -1;
  }
  std::string rel = str(p);
  rel = rel == "/" ? "." : rel.substr(1);
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return open_in_root(root->second.fd, rel.c_str(), how);
}

path_id path_table::child(path_id parent, std::string_view name) {
  if (name.empty() || name == ".") return parent;
  if (name == "..") return this->parent(parent);
  const uint64_t hash = child_hash(parent, name);
  if (const path_id id = find_child(parent, name, hash)) return id;
  const path_id id = note(w_.intern_child(parent, name), parent, name);
  // Only a node that now holds this very name is findable by it (one noted before with
  // another name keeps that one, and is asked of the writer again).
  if (nodes_[id].parent == parent && names_.get(nodes_[id].name) == name) add_child(id, hash);
  return id;
}

path_id path_table::find_child(path_id parent, std::string_view name, uint64_t hash) const {
  if (children_.empty()) return no_id;
  const size_t mask = children_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const path_id id = children_[i];
    if (id == no_id) return no_id;
    if (nodes_[id].parent == parent && names_.get(nodes_[id].name) == name) return id;
  }
}

void path_table::add_child(path_id id, uint64_t hash) {
  if ((children_count_ + 1) * 2 > children_.size()) {
    std::vector<path_id> old(std::max<size_t>(1024, children_.size() * 2), no_id);
    old.swap(children_);
    const size_t mask = children_.size() - 1;
    for (const path_id k : old) {
      if (k == no_id) continue;
      size_t i = child_hash(nodes_[k].parent, names_.get(nodes_[k].name)) & mask;
      while (children_[i] != no_id) i = (i + 1) & mask;
      children_[i] = k;
    }
  }
  const size_t mask = children_.size() - 1;
  size_t i = hash & mask;
  while (children_[i] != no_id) i = (i + 1) & mask;
  children_[i] = id;
  ++children_count_;
}

path_id path_table::parent(path_id id) const {
  if (id >= nodes_.size()) return root_path;
  return nodes_[id].parent == no_id ? nodes_[id].top : nodes_[id].parent;
}

std::string path_table::str(path_id id) const {
  if (id == no_id) return {};
  std::vector<std::string_view> names;
  for (path_id p = id; p < nodes_.size() && nodes_[p].parent != no_id; p = nodes_[p].parent)
    names.push_back(names_.get(nodes_[p].name));
  if (names.empty()) return "/";
  std::string s;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    s += '/';
    s += *it;
  }
  return s;
}

path_id path_table::from_walk(path_id top, std::span<const uint8_t> walk) {
  if (walk.empty()) return top;
  const size_t leaf_len = walk[0];
  if (1 + leaf_len > walk.size()) return no_id;
  const std::string_view leaf(reinterpret_cast<const char*>(walk.data()) + 1, leaf_len);
  const std::span<const uint8_t> up = walk.subspan(1 + leaf_len);
  // Most walks differ only in their leaf: remember directories by their top and walk bytes.
  std::string& key = walk_key_;
  key.assign(reinterpret_cast<const char*>(&top), sizeof top);
  key.append(reinterpret_cast<const char*>(up.data()), up.size());
  auto it = walk_dirs_.find(key);
  if (it == walk_dirs_.end()) {
    it = walk_dirs_.emplace(key, no_id).first;
    std::vector<std::string_view> parts;
    for (size_t at = 0; at < up.size();) {
      const size_t len = up[at];
      if (at + 1 + len > up.size()) break;
      parts.emplace_back(reinterpret_cast<const char*>(up.data()) + at + 1, len);
      at += 1 + len;
    }
    path_id dir = top;
    for (auto p = parts.rbegin(); p != parts.rend(); ++p) dir = child(dir, *p);
    it->second = dir;
  }
  return child(it->second, leaf);
}

path_id path_table::lexical(path_id base, std::string_view rel) {
  path_id id = base;
  size_t pos = 0;
  while (pos <= rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string_view::npos) slash = rel.size();
    id = child(id, rel.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return id;
}

path_id path_table::from_absolute(path_id top, std::string_view path) {
  return lexical(top, path);
}

// Where the kernel took `dir` (relative to `base`) to: resolved beneath the root's directory,
// then read back from /proc/self/fd, which shows it as fsrr sees it, below the root's own.
path_id path_table::resolve_dir(path_id base, std::string_view dir) {
  std::string key = std::to_string(base);
  key += '/';
  key += dir;
  if (auto it = dirs_.find(key); it != dirs_.end()) return it->second;
  const path_id t = top(base);
  const auto root = roots_.find(t);
  const std::string full =
      dir.front() == '/' ? std::string(dir) : str(base) + "/" + std::string(dir);
  int fd = -1;
  if (root != roots_.end() && root->second.fd >= 0) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    fd = open_in_root(root->second.fd, full.c_str() + (full[0] == '/'), how);
  }
  if (fd < 0) {
    // Not there (yet): the part that is there is resolved, the rest taken as written, so a
    // failed lookup under /lib names /usr/lib's directory where /lib -> usr/lib.
    const size_t slash = dir.rfind('/');
    if (slash == std::string_view::npos || slash == 0 || (errno != ENOENT && errno != ENOTDIR))
      return lexical(base, dir);
    return child(resolve_dir(base, dir.substr(0, slash)), dir.substr(slash + 1));
  }
  std::string real = fd_path(fd);
  // Removed since it was opened (the decoder runs behind the workload): its name reads
  // "... (deleted)", so it is taken as written, and not kept for the next call.
  struct stat st {};
  const bool removed = ::fstat(fd, &st) != 0 || st.st_nlink == 0;
  ::close(fd);
  if (removed) return lexical(base, dir);
  const std::string& from = root->second.seen_as;
  if (from != "/") {
    if (real.compare(0, from.size(), from) != 0 || (real.size() > from.size() && real[from.size()] != '/'))
      return lexical(base, dir);  // not below the root as fsrr sees it: take it as written
    real.erase(0, from.size());
  }
  // The name read back is the directory's name now, not when it was opened: the workload
  // may have renamed it in between (borg renames txn.tmp to txn.active right after filling
  // it). A name other than the one asked (a symlink on the way, or such a rename) is kept
  // only if the asked name and the read one both still lead to the object that was opened.
  if (real != full && !(same_object(root->second.fd, full, st) && same_object(root->second.fd, real, st)))
    return lexical(base, dir);
  const path_id id = from_absolute(t, real.empty() ? "/" : real);
  dirs_.emplace(std::move(key), id);
  return id;
}

path_id path_table::resolve(path_id base, std::string_view name) {
  if (name.empty()) return base;
  if (name.front() == '/') base = top(base);
  while (name.size() > 1 && name.back() == '/') name.remove_suffix(1);
  const size_t slash = name.rfind('/');
  if (slash == std::string_view::npos) return child(base, name);
  const std::string_view dir = name.substr(0, slash);
  const std::string_view leaf = name.substr(slash + 1);
  const path_id d = dir.empty() ? top(base) : resolve_dir(base, dir);
  return child(d, leaf);
}

}  // namespace fsrr::recorder
