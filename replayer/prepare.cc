#include "prepare.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "xattr_value.h"

namespace fsrr {
namespace {

constexpr size_t io_block = 1 << 20;
constexpr mode_t default_dir_mode = 0755;

timespec to_timespec(int64_t ns) {
  return {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

class preparer {
 public:
  preparer(trace_reader& trace, const target_root& target, const data_source& data,
           const prepare_options& opt)
      : trace_(trace), target_(target), data_(data), opt_(opt), buf_(io_block) {
    umask_ = ::umask(0);
    ::umask(umask_);
  }

  prepare_result run() {
    const auto start = std::chrono::steady_clock::now();
    const auto& tree = trace_.tree();
    uint64_t done = 0;
    for (const tree_entry& e : tree) {
      create(e);
      if (opt_.progress && (++done & 1023) == 0) opt_.progress(done, tree.size());
    }
    // Directories last and deepest first: creating children changes a directory's times,
    // and a read-only directory mode would have blocked them.
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) finish_dir(**it);
    if (opt_.progress) opt_.progress(tree.size(), tree.size());
    r_.wall_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
    return r_;
  }

 private:
  void error(const tree_entry& e, const std::string& what, int err) {
    ++r_.errors;
    if (r_.first_errors.size() < 10)
      r_.first_errors.push_back(
          fmt::format("{}: {}: {}", trace_.path_string(e.path), what, std::strerror(err)));
  }

  // The entry's place beneath the target, with its parent directories in place.
  std::optional<target_root::location> place(const tree_entry& e) {
    const std::string p = trace_.path_string(e.path);
    auto at = target_.locate(p);
    if (!at) {
      error(e, "path is not confined to the target", EPERM);
      return std::nullopt;
    }
    const size_t slash = at->rel.rfind('/');
    if (slash != std::string::npos) {
      const target_root::location parent{at->root, at->rel.substr(0, slash)};
      if (parent.rel != last_parent_) {
        if (const int r = target_.make_dirs(parent, default_dir_mode); r != 0) {
          error(e, "parent directory", -r);
          return std::nullopt;
        }
        last_parent_ = parent.rel;
      }
    }
    return at;
  }

  void create(const tree_entry& e) {
    auto at = place(e);
    if (!at) return;
    switch (e.mode & S_IFMT) {
      case S_IFDIR: return create_dir(e, *at);
      case S_IFREG: return create_file(e, *at);
      case S_IFLNK: return create_symlink(e, *at);
      case S_IFIFO:
      case S_IFSOCK: return create_node(e, *at);
      default: ++r_.skipped;  // device nodes: a replay must never open a disk
    }
  }

  void create_dir(const tree_entry& e, const target_root::location& at) {
    if (!at.rel.empty()) {
      std::string name;
      const int parent = target_.open_parent(at, name);
      if (parent < 0) return error(e, "open parent", -parent);
      // Owner-writable until finish_dir applies the recorded mode.
      const int r = ::mkdirat(parent, name.c_str(), 0700);
      const int err = errno;
      ::close(parent);
      if (r != 0 && err != EEXIST) return error(e, "mkdir", err);
    }
    ++r_.dirs;
    dirs_.push_back(&e);
  }

  void finish_dir(const tree_entry& e) {
    auto at = target_.locate(trace_.path_string(e.path));
    const int fd = at ? target_.open(*at, O_RDONLY | O_DIRECTORY) : -EPERM;
    if (fd < 0) return error(e, "open directory", -fd);
    set_xattrs(e, fd);
    set_owner_mode_times(e, fd);
    ::close(fd);
  }

  void create_file(const tree_entry& e, const target_root::location& at) {
    if (e.link_group != 0) {
      auto [it, first] = link_first_.try_emplace(e.link_group, at);
      if (!first) return create_link(e, it->second, at);
    }
    // Created with its final permissions where the umask allows: one chmod less per file.
    const int fd = target_.open(at, O_WRONLY | O_CREAT | O_EXCL, e.mode & 0777);
    if (fd < 0) return error(e, "create", -fd);
    if (!write_data(e, fd)) {
      ::close(fd);
      return;
    }
    set_xattrs(e, fd);
    set_owner_mode_times(e, fd, (e.mode & 07777) != (e.mode & 0777 & ~umask_));
    ::close(fd);
    ++r_.files;
  }

  bool write_data(const tree_entry& e, int fd) {
    const uint64_t key = content_key(e.path);
    auto write_range = [&](uint64_t off, uint64_t len) {
      while (len > 0) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(len, buf_.size()));
        data_.fill(key, off, {buf_.data(), n});
        const ssize_t w = ::pwrite(fd, buf_.data(), n, static_cast<off_t>(off));
        if (w <= 0) {
          error(e, "write", w < 0 ? errno : EIO);
          return false;
        }
        off += static_cast<uint64_t>(w);
        len -= static_cast<uint64_t>(w);
        r_.bytes += static_cast<uint64_t>(w);
      }
      return true;
    };
    if (e.extents.empty()) return write_range(0, e.size);
    // Sparse: only the recorded data extents are written; the rest stays a hole.
    for (const auto& x : e.extents) {
      if (x.offset >= e.size) continue;
      if (!write_range(x.offset, std::min(x.length, e.size - x.offset))) return false;
    }
    if (::ftruncate(fd, static_cast<off_t>(e.size)) != 0) {
      error(e, "truncate", errno);
      return false;
    }
    return true;
  }

  void create_link(const tree_entry& e, const target_root::location& first,
                   const target_root::location& at) {
    std::string from_name, to_name;
    const int from = target_.open_parent(first, from_name);
    const int to = target_.open_parent(at, to_name);
    if (from >= 0 && to >= 0) {
      if (::linkat(from, from_name.c_str(), to, to_name.c_str(), 0) == 0)
        ++r_.hardlinks;
      else
        error(e, "link", errno);
    } else {
      error(e, "open parent", from < 0 ? -from : -to);
    }
    if (from >= 0) ::close(from);
    if (to >= 0) ::close(to);
  }

  void create_symlink(const tree_entry& e, const target_root::location& at) {
    std::string name;
    const int parent = target_.open_parent(at, name);
    if (parent < 0) return error(e, "open parent", -parent);
    // The target string is stored as recorded; confinement happens when it is followed.
    if (::symlinkat(trace_.string(e.target).c_str(), parent, name.c_str()) != 0) {
      error(e, "symlink", errno);
    } else {
      if (opt_.owners) ::fchownat(parent, name.c_str(), e.uid, e.gid, AT_SYMLINK_NOFOLLOW);
      const timespec t[2] = {to_timespec(e.atime_ns), to_timespec(e.mtime_ns)};
      ::utimensat(parent, name.c_str(), t, AT_SYMLINK_NOFOLLOW);
      ++r_.symlinks;
    }
    ::close(parent);
  }

  void create_node(const tree_entry& e, const target_root::location& at) {
    std::string name;
    const int parent = target_.open_parent(at, name);
    if (parent < 0) return error(e, "open parent", -parent);
    if (::mknodat(parent, name.c_str(), (e.mode & S_IFMT) | 0600, 0) != 0) {
      error(e, "mknod", errno);
    } else {
      const int fd = ::openat(parent, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        if (opt_.owners) ::fchownat(fd, "", e.uid, e.gid, AT_EMPTY_PATH);
        ::syscall(452 /* fchmodat2 */, fd, "", e.mode & 07777, AT_EMPTY_PATH);
        const timespec t[2] = {to_timespec(e.atime_ns), to_timespec(e.mtime_ns)};
        ::utimensat(fd, "", t, AT_EMPTY_PATH);
        ::close(fd);
      }
      ++r_.other;
    }
    ::close(parent);
  }

  void set_xattrs(const tree_entry& e, int fd) {
    for (const auto& x : e.xattrs) {
      const std::string& name = trace_.string(x.name);
      const auto value = xattr_value(name, x.size, data_, content_key(e.path));
      if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) == 0)
        ++r_.xattrs;
      else
        error(e, "xattr " + name, errno);
    }
  }

  // chown before chmod: chown clears set-id bits. A new file already belongs to us, so the
  // common case needs neither call.
  void set_owner_mode_times(const tree_entry& e, int fd, bool chmod = true) {
    const bool chown = opt_.owners && (e.uid != euid_ || e.gid != egid_);
    if (chown && ::fchown(fd, e.uid, e.gid) != 0) error(e, "chown", errno);
    if ((chmod || chown) && ::fchmod(fd, e.mode & 07777) != 0) error(e, "chmod", errno);
    const timespec t[2] = {to_timespec(e.atime_ns), to_timespec(e.mtime_ns)};
    if (::futimens(fd, t) != 0) error(e, "set times", errno);
  }

  trace_reader& trace_;
  const target_root& target_;
  const data_source& data_;
  const prepare_options& opt_;
  std::vector<uint8_t> buf_;
  prepare_result r_;
  std::vector<const tree_entry*> dirs_;
  std::unordered_map<uint32_t, target_root::location> link_first_;
  std::string last_parent_;
  mode_t umask_ = 022;
  const uid_t euid_ = ::geteuid();
  const gid_t egid_ = ::getegid();
};

}  // namespace

prepare_result prepare_tree(trace_reader& trace, const target_root& target,
                            const data_source& data, const prepare_options& options) {
  return preparer(trace, target, data, options).run();
}

}  // namespace fsrr
