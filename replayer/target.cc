#include "target.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace fsrr {
namespace {

result<int> open_dir(const std::string& p, const char* what) {
  const int fd = ::open(p.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return failure("{} {}: {}", what, p,
                   errno == ENOTDIR ? "not a directory" : std::strerror(errno));
  return fd;
}

// Splits an absolute trace path into plain components; false on '', '.' or '..'.
bool plain_components(std::string_view p, std::string& rel) {
  rel.clear();
  size_t pos = 1;
  while (pos <= p.size()) {
    size_t end = p.find('/', pos);
    if (end == std::string_view::npos) end = p.size();
    const std::string_view c = p.substr(pos, end - pos);
    if (end == p.size() && c.empty() && pos == p.size()) break;  // trailing slash or "/"
    if (c.empty() || c == "." || c == "..") return false;
    if (!rel.empty()) rel += '/';
    rel.append(c);
    pos = end + 1;
  }
  return true;
}

}  // namespace

result<map_rule> parse_map(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    return failure("--map '{}': expected FROM=TO", text);
  map_rule r{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  std::string rel;
  if (r.from[0] != '/' || !plain_components(r.from, rel))
    return failure("--map '{}': FROM must be an absolute path without '.' or '..'", text);
  while (r.from.size() > 1 && r.from.back() == '/') r.from.pop_back();
  return r;
}

bool plain_path(std::string_view p) {
  std::string rel;
  return !p.empty() && p[0] == '/' && plain_components(p, rel);
}

result<target_root> target_root::open(const std::string& target,
                                      const std::vector<map_rule>& maps) {
  for (const auto& m : maps)
    if (!plain_path(m.from))
      return failure("map from '{}': not an absolute path of plain names", m.from);
  target_root t(target);  // closes what it opened if a step below fails
  const auto fd = open_dir(target, "target");
  if (!fd) return tl::unexpected(fd.error());
  t.fd_ = *fd;
  for (const auto& m : maps) {
    const auto to = open_dir(m.to, "--map destination");
    if (!to) return tl::unexpected(to.error());
    t.maps_.push_back({m.from, *to, m.to});
  }
  std::stable_sort(t.maps_.begin(), t.maps_.end(),
                   [](const mapped& a, const mapped& b) { return a.from.size() > b.from.size(); });
  return t;
}

target_root::target_root(target_root&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), maps_(std::move(o.maps_)) {
  o.fd_ = -1;
  o.maps_.clear();
}

target_root::~target_root() {
  for (const auto& m : maps_) ::close(m.fd);
  if (fd_ >= 0) ::close(fd_);
}

const std::string& target_root::path_of(int root) const {
  for (const auto& m : maps_)
    if (m.fd == root) return m.to;
  return path_;
}

std::optional<target_root::location> target_root::locate(std::string_view p) const {
  if (p.empty() || p[0] != '/') return std::nullopt;
  location at{fd_, {}};
  std::string_view rest = p;
  for (const auto& m : maps_) {
    const bool root_rule = m.from == "/";
    if (root_rule || (p.substr(0, m.from.size()) == m.from &&
                      (p.size() == m.from.size() || p[m.from.size()] == '/'))) {
      at.root = m.fd;
      rest = root_rule ? p : p.substr(m.from.size());
      if (rest.empty()) rest = "/";
      break;
    }
  }
  if (!plain_components(rest, at.rel)) return std::nullopt;
  return at;
}

int target_root::open(const location& at, int flags, mode_t mode, uint64_t extra_resolve) const {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve;
  const char* p = at.rel.empty() ? "." : at.rel.c_str();
  for (;;) {
    const long fd = ::syscall(SYS_openat2, at.root, p, &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EAGAIN && errno != EINTR) return -errno;  // EAGAIN: a rename raced the walk
  }
}

int target_root::open_parent(const location& at, std::string& name) const {
  if (at.rel.empty()) return -EINVAL;
  const size_t slash = at.rel.rfind('/');
  name = slash == std::string::npos ? at.rel : at.rel.substr(slash + 1);
  const location parent{at.root, slash == std::string::npos ? "" : at.rel.substr(0, slash)};
  return open(parent, O_PATH | O_DIRECTORY);
}

int target_root::make_dirs(const location& at, mode_t mode) const {
  const int fd = open(at, O_PATH | O_DIRECTORY);
  if (fd >= 0) {
    ::close(fd);
    return 0;
  }
  if (fd != -ENOENT) return fd;
  std::string name;
  const size_t slash = at.rel.rfind('/');
  if (slash != std::string::npos) {
    const int r = make_dirs({at.root, at.rel.substr(0, slash)}, mode);
    if (r != 0) return r;
  }
  const int parent = open_parent(at, name);
  if (parent < 0) return parent;
  const int r = ::mkdirat(parent, name.c_str(), mode) == 0 || errno == EEXIST ? 0 : -errno;
  ::close(parent);
  return r;
}

bool target_root::empty() const {
  const int fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return false;
  }
  bool empty = true;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0 &&
        std::strcmp(e->d_name, "lost+found") != 0) {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace fsrr
