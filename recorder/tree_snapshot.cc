#include "tree_snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "syscall_nr.h"

namespace fsrr {
namespace {

constexpr size_t max_extents = 65536;

int64_t ns(const timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

// listxattrat/getxattrat (Linux 6.13) name an entry relative to a directory fd; older
// kernels fall back to the l*xattr calls on a /proc/self/fd path, which cost a procfs walk.
ssize_t list_names(int dirfd, const char* name, char* buf, size_t size) {
  static std::atomic<bool> at_calls{true};
  if (at_calls.load(std::memory_order_relaxed)) {
    const long n = ::syscall(nr::listxattrat, dirfd, name, AT_SYMLINK_NOFOLLOW, buf, size);
    if (n >= 0 || errno != ENOSYS) return n;
    at_calls.store(false, std::memory_order_relaxed);
  }
  return ::llistxattr(fmt::format("/proc/self/fd/{}/{}", dirfd, name).c_str(), buf, size);
}

ssize_t value_size(int dirfd, const char* name, const char* attr) {
  nr::xattr_args args{0, 0, 0};
  const long n = ::syscall(nr::getxattrat, dirfd, name, AT_SYMLINK_NOFOLLOW, attr, &args,
                           sizeof args);
  if (n >= 0 || errno != ENOSYS) return n;
  return ::lgetxattr(fmt::format("/proc/self/fd/{}/{}", dirfd, name).c_str(), attr, nullptr, 0);
}

void read_xattrs(trace_writer& w, int dirfd, const char* entry, tree_entry& e) {
  std::vector<char> names(1024);
  for (;;) {
    const ssize_t n = list_names(dirfd, entry, names.data(), names.size());
    if (n >= 0) {
      names.resize(static_cast<size_t>(n));
      break;
    }
    if (errno != ERANGE) return;  // ENOTSUP and friends: no xattrs here
    names.resize(names.size() * 4);
  }
  for (size_t pos = 0; pos < names.size();) {
    const char* name = names.data() + pos;
    const size_t len = ::strnlen(name, names.size() - pos);
    pos += len + 1;
    const ssize_t size = value_size(dirfd, entry, name);
    if (size < 0) continue;  // removed meanwhile
    e.xattrs.push_back({w.intern_string({name, len}), static_cast<uint32_t>(size)});
  }
}

// Data extents of a sparse file, found with SEEK_DATA/SEEK_HOLE.
void read_extents(int dirfd, const char* name, tree_entry& e) {
  const int fd = ::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
  const int fd2 = fd >= 0 ? fd : ::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd2 < 0) return;
  off_t pos = 0;
  const off_t end = static_cast<off_t>(e.size);
  while (pos < end) {
    const off_t data = ::lseek(fd2, pos, SEEK_DATA);
    if (data < 0) break;  // ENXIO: only a hole remains
    off_t hole = ::lseek(fd2, data, SEEK_HOLE);
    if (hole < 0) hole = end;
    if (e.extents.size() == max_extents) {  // keep the tail as one extent
      e.extents.back().length = static_cast<uint64_t>(end) - e.extents.back().offset;
      break;
    }
    e.extents.push_back({static_cast<uint64_t>(data), static_cast<uint64_t>(hole - data)});
    pos = hole;
  }
  // No extents at all is a file that is one hole; mark it with an empty extent at 0.
  if (e.extents.empty()) e.extents.push_back({0, 0});
  ::close(fd2);
}

}  // namespace

std::optional<tree_entry> snapshot_entry(trace_writer& w, int dirfd, const char* name,
                                         path_id path) {
  struct stat st;
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  tree_entry e;
  e.path = path;
  e.mode = st.st_mode;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.size = static_cast<uint64_t>(st.st_size);
  e.allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  e.atime_ns = ns(st.st_atim);
  e.mtime_ns = ns(st.st_mtim);
  e.ctime_ns = ns(st.st_ctim);
  e.nlink = static_cast<uint32_t>(st.st_nlink);
  if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlinkat(dirfd, name, buf, sizeof buf);
    if (n >= 0) e.target = w.intern_string({buf, static_cast<size_t>(n)});
  }
  read_xattrs(w, dirfd, name, e);
  if (S_ISREG(st.st_mode) && e.allocated < e.size) read_extents(dirfd, name, e);
  return e;
}

result<snapshot_stats> snapshot_tree(trace_writer& w, const std::string& dir) {
  const auto cannot = [&dir] {
    return failure("cannot snapshot {}: {}", dir, std::strerror(errno));
  };
  char real[PATH_MAX];
  if (!::realpath(dir.c_str(), real)) return cannot();
  const int top = ::open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (top < 0) return cannot();
  struct stat top_st;
  ::fstat(top, &top_st);

  snapshot_stats stats;
  auto add = [&](int dirfd, const char* name, path_id id) -> std::optional<tree_entry> {
    auto e = snapshot_entry(w, dirfd, name, id);
    if (!e) {
      ++stats.errors;
      return e;
    }
    if (!S_ISDIR(e->mode) && e->nlink > 1) {
      struct stat st;
      if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        e->link_group = w.link_group(st.st_dev, st.st_ino);
    }
    w.add_tree_entry(*e);
    ++stats.entries;
    return e;
  };

  // The walk: a stack of directories still to list (by path: holding an fd for each would run
  // out of fds on wide trees), names sorted for a stable trace.
  struct pending_dir {
    std::string path;
    path_id id;
  };
  const path_id top_id = w.intern_path(real);
  if (!add(top, ".", top_id)) {
    const auto e = cannot();  // before close() can change errno
    ::close(top);
    return e;
  }
  ::close(top);
  std::vector<pending_dir> stack{{real, top_id}};
  std::vector<std::string> names;
  std::vector<pending_dir> subdirs;
  while (!stack.empty()) {
    const pending_dir d = std::move(stack.back());
    stack.pop_back();
    const int fd = ::open(d.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      ++stats.errors;
      if (fd >= 0) ::close(fd);
      continue;
    }
    if (st.st_dev != top_st.st_dev) {  // a mount point: recorded, not entered
      ::close(fd);
      continue;
    }
    names.clear();
    if (DIR* dp = ::fdopendir(::dup(fd))) {
      while (const dirent* de = ::readdir(dp)) {
        if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
        names.emplace_back(de->d_name);
      }
      ::closedir(dp);
    } else {
      ++stats.errors;
    }
    std::sort(names.begin(), names.end());
    subdirs.clear();
    for (const auto& name : names) {
      const path_id id = w.intern_child(d.id, name);
      auto e = add(fd, name.c_str(), id);
      if (e && S_ISDIR(e->mode))
        subdirs.push_back({d.path == "/" ? "/" + name : d.path + "/" + name, id});
    }
    ::close(fd);
    // Pushed in reverse so that they are listed in name order.
    for (auto it = subdirs.rbegin(); it != subdirs.rend(); ++it) stack.push_back(std::move(*it));
  }
  return stats;
}

}  // namespace fsrr
