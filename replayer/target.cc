#include "target.h"

#include "trace_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
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

root_layout root_layout_of(trace_reader& trace) {
  root_layout l;
  const auto& roots = trace.roots();
  l.depth = roots.size() > 1 ? 1 : 0;
  for (size_t k = 0; k < roots.size(); ++k)
    if (const auto name = host_root_name(trace.string(roots[k].where))) {
      // one directory each: a name met again (a merge of merges, digests that collide) keeps
      // its root's own rootN
      const std::string rel = "hosts/" + *name;
      if (std::none_of(l.hosts.begin(), l.hosts.end(),
                       [&](const root_layout::renamed& h) { return h.rel == rel; }))
        l.hosts.push_back({fmt::format("/root{}", k + 1), rel});
    }
  return l;
}

result<target_root> target_root::open(const std::string& target,
                                      const std::vector<map_rule>& maps,
                                      const root_layout& layout) {
  std::vector<map_rule> placed = maps;
  for (map_rule& m : placed)
    for (const auto& h : layout.hosts) {
      const std::string from = "/" + h.rel;  // "/hosts/NAME"
      if (m.from.compare(0, from.size(), from) == 0 &&
          (m.from.size() == from.size() || m.from[from.size()] == '/'))
        m.from = h.top + m.from.substr(from.size());
    }
  auto t = open(target, placed, layout.depth);
  if (t) t->hosts_ = layout.hosts;
  return t;
}

result<target_root> target_root::open(const std::string& target,
                                      const std::vector<map_rule>& maps, unsigned root_depth) {
  for (const auto& m : maps)
    if (!plain_path(m.from))
      return failure("map from '{}': not an absolute path of plain names", m.from);
  target_root t(target);  // closes what it opened if a step below fails
  t.root_depth_ = root_depth;
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
    : path_(std::move(o.path_)),
      root_depth_(o.root_depth_),
      hosts_(std::move(o.hosts_)),
      fd_(o.fd_),
      maps_(std::move(o.maps_)) {
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
  if (at.root == fd_)
    for (const auto& h : hosts_) {
      const std::string_view top = std::string_view(h.top).substr(1);  // "root3"
      if (at.rel.compare(0, top.size(), top) == 0 &&
          (at.rel.size() == top.size() || at.rel[top.size()] == '/')) {
        at.rel.replace(0, top.size(), h.rel);
        break;
      }
    }
  return at;
}

int target_root::open(const location& at, int flags, mode_t mode, uint64_t extra_resolve) const {
  const int fd = open_beneath(at, flags, mode, extra_resolve);
  if (fd != -EXDEV || (extra_resolve & RESOLVE_NO_SYMLINKS)) return fd;
  // O_CREAT | O_EXCL never follows a last symlink: it fails with EEXIST on it
  const bool follow_last =
      !(flags & O_NOFOLLOW) && (flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
  int err = fd;
  const auto there = follow_links(at, follow_last, err);
  return there ? open_beneath(*there, flags, mode, extra_resolve) : err;
}

int target_root::open_beneath(const location& at, int flags, mode_t mode,
                              uint64_t extra_resolve) const {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  // (O_TMPFILE holds O_DIRECTORY's bit: only the whole of it asks for a mode)
  how.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve;
  const char* p = at.rel.empty() ? "." : at.rel.c_str();
  for (;;) {
    const long fd = ::syscall(SYS_openat2, at.root, p, &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EAGAIN && errno != EINTR) return -errno;  // EAGAIN: a rename raced the walk
  }
}

std::string target_root::shown(std::string_view p) const {
  for (const auto& h : hosts_)
    if (p.substr(0, h.top.size()) == h.top && (p.size() == h.top.size() || p[h.top.size()] == '/'))
      return "/" + h.rel + std::string(p.substr(h.top.size()));
  return std::string(p);
}

std::string target_root::trace_path(const location& at) const {
  std::string from = "/";
  for (const auto& m : maps_)
    if (m.fd == at.root && m.from != "/") from = m.from + '/';
  if (at.root == fd_)
    for (const auto& h : hosts_)
      if (at.rel.compare(0, h.rel.size(), h.rel) == 0 &&
          (at.rel.size() == h.rel.size() || at.rel[h.rel.size()] == '/'))
        return h.top + at.rel.substr(h.rel.size());
  return from + at.rel;
}

// The kernel's walk, done by hand over trace paths: each component is looked at on the
// target (beneath its root, never followed there); a symlink's target replaces it, an
// absolute one from the recorded root's top. '..' is taken after the links before it were
// followed, as the kernel takes it, and never climbs above that top.
std::optional<target_root::location> target_root::follow_links(const location& at,
                                                               bool follow_last,
                                                               int& err) const {
  std::deque<std::string> todo;
  const auto push_front = [&todo](std::string_view path) {
    std::vector<std::string> parts;
    for (size_t pos = 0; pos < path.size();) {
      size_t end = path.find('/', pos);
      if (end == std::string_view::npos) end = path.size();
      if (end > pos) parts.emplace_back(path.substr(pos, end - pos));
      pos = end + 1;
    }
    todo.insert(todo.begin(), parts.begin(), parts.end());
  };
  push_front(trace_path(at));
  const size_t top = std::min<size_t>(root_depth_, todo.size());
  std::vector<std::string> done(todo.begin(), todo.begin() + static_cast<long>(top));
  todo.erase(todo.begin(), todo.begin() + static_cast<long>(top));
  const auto joined = [&done] {
    std::string p;
    for (const auto& c : done) (p += '/') += c;
    return p.empty() ? std::string("/") : p;
  };
  int links = 0;
  char buf[PATH_MAX];
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      if (done.size() > top) done.pop_back();
      continue;
    }
    done.push_back(std::move(c));
    if (todo.empty() && !follow_last) break;
    const auto here = locate(joined());
    if (!here) continue;
    const int fd = open_beneath(*here, O_PATH | O_NOFOLLOW, 0, 0);
    if (fd < 0) continue;  // missing: taken as named, and the open says so
    const ssize_t n = ::readlinkat(fd, "", buf, sizeof buf);
    ::close(fd);
    if (n < 0) continue;  // not a symlink
    if (++links > 40) {   // the kernel's limit
      err = -ELOOP;
      return std::nullopt;
    }
    done.pop_back();
    const std::string_view link(buf, static_cast<size_t>(n));
    if (link.empty()) {
      err = -ENOENT;
      return std::nullopt;
    }
    if (link[0] == '/') done.resize(top);
    push_front(link);
  }
  auto there = locate(joined());
  if (!there) err = -EXDEV;
  return there;
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
