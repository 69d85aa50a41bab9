#include "prepare.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "syscall_nr.h"
#include "xattr_value.h"

namespace fsrr {
namespace {

constexpr size_t io_block = 1 << 20;
constexpr mode_t default_dir_mode = 0755;
constexpr size_t batch = 256;  // entries a worker claims at a time

timespec to_timespec(int64_t ns) {
  return {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

bool is_dir(const tree_entry& e) { return S_ISDIR(e.mode); }

// The order of work: directories first (serially: files need them), then files, symlinks
// and nodes (in parallel), then the extra names of hard-linked inodes (their first name must
// exist), then directory modes and times, deepest first (creating children changes a
// directory's times, and a read-only mode would have blocked them).
class worker {
 public:
  worker(trace_reader& trace, const target_root& target, const data_source& data,
         const prepare_options& opt, mode_t umask)
      : trace_(trace), target_(target), data_(data), opt_(opt), umask_(umask) {}

  prepare_result r;

  void create(const tree_entry& e) {
    auto at = place(e);
    if (!at) return;
    switch (e.mode & S_IFMT) {
      case S_IFDIR: return create_dir(e, *at);
      case S_IFREG: return create_file(e, *at);
      case S_IFLNK: return create_symlink(e, *at);
      case S_IFIFO:
      case S_IFSOCK: return create_node(e, *at);
      default: ++r.skipped;  // device nodes: a replay must never open a disk
    }
  }

  // A later name of a hard-linked inode whose first name is `first`.
  void create_link(const tree_entry& e, const tree_entry& first) {
    auto at = place(e);
    auto from_at = target_.locate(trace_.placed_path(first.path));
    if (!at || !from_at) return;
    std::string from_name, to_name;
    const int from = target_.open_parent(*from_at, from_name);
    const int to = target_.open_parent(*at, to_name);
    if (from >= 0 && to >= 0) {
      if (::linkat(from, from_name.c_str(), to, to_name.c_str(), 0) == 0)
        ++r.hardlinks;
      else
        error(e, "link", errno);
    } else {
      error(e, "open parent", from < 0 ? -from : -to);
    }
    if (from >= 0) ::close(from);
    if (to >= 0) ::close(to);
  }

  void finish_dir(const tree_entry& e) {
    auto at = target_.locate(trace_.placed_path(e.path));
    if (!at) return;  // reported when it was created
    const int fd = target_.open(*at, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return error(e, "open directory", -fd);
    set_xattrs(e, fd);
    set_owner_mode_times(e, fd, true);
    ::close(fd);
  }

 private:
  void error(const tree_entry& e, const std::string& what, int err) {
    ++r.errors;
    if (r.first_errors.size() < 10)
      r.first_errors.push_back(
          fmt::format("{}: {}: {}", trace_.placed_path(e.path), what, std::strerror(err)));
  }

  // The entry's place beneath the target, with its parent directories in place.
  std::optional<target_root::location> place(const tree_entry& e) {
    auto at = target_.locate(trace_.placed_path(e.path));
    if (!at) {
      error(e, "path is not confined to the target", EPERM);
      return std::nullopt;
    }
    const size_t slash = at->rel.rfind('/');
    if (slash != std::string::npos) {
      const target_root::location parent{at->root, at->rel.substr(0, slash)};
      if (parent.rel != last_parent_ || parent.root != last_root_) {
        if (const int res = target_.make_dirs(parent, default_dir_mode); res != 0) {
          error(e, "parent directory", -res);
          return std::nullopt;
        }
        last_parent_ = parent.rel;
        last_root_ = parent.root;
      }
    }
    return at;
  }

  void create_dir(const tree_entry& e, const target_root::location& at) {
    if (!at.rel.empty()) {
      std::string name;
      const int parent = target_.open_parent(at, name);
      if (parent < 0) return error(e, "open parent", -parent);
      // Owner-writable until finish_dir applies the recorded mode.
      const int res = ::mkdirat(parent, name.c_str(), 0700);
      const int err = errno;
      ::close(parent);
      if (res != 0 && err != EEXIST) return error(e, "mkdir", err);
    }
    ++r.dirs;
  }

  void create_file(const tree_entry& e, const target_root::location& at) {
    // Created with its final permissions where the umask allows: one chmod less per file.
    const int fd = target_.open(at, O_WRONLY | O_CREAT | O_EXCL, e.mode & 0777);
    if (fd < 0) return error(e, "create", -fd);
    if (write_data(e, fd)) {
      set_xattrs(e, fd);
      set_owner_mode_times(e, fd, (e.mode & 07777) != (e.mode & 0777 & ~umask_));  // set-id too
      ++r.files;
    }
    ::close(fd);
  }

  bool write_data(const tree_entry& e, int fd) {
    const uint64_t key = content_key(e.path);
    auto write_range = [&](uint64_t off, uint64_t len) {
      // made on first use, not zeroed: every byte written is filled first
      if (!buf_) buf_.reset(new uint8_t[io_block]);
      while (len > 0) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(len, io_block));
        data_.fill(key, off, {buf_.get(), n});
        const ssize_t w = ::pwrite(fd, buf_.get(), n, static_cast<off_t>(off));
        if (w <= 0) {
          error(e, "write", w < 0 ? errno : EIO);
          return false;
        }
        off += static_cast<uint64_t>(w);
        len -= static_cast<uint64_t>(w);
        r.bytes += static_cast<uint64_t>(w);
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

  void create_symlink(const tree_entry& e, const target_root::location& at) {
    // One gone before the recorder could read its target: nothing to point it at.
    if (e.target == no_id) {
      ++r.skipped;
      return;
    }
    std::string name;
    const int parent = target_.open_parent(at, name);
    if (parent < 0) return error(e, "open parent", -parent);
    // The target string is stored as recorded; confinement happens when anything follows it.
    if (::symlinkat(trace_.string(e.target).c_str(), parent, name.c_str()) != 0) {
      error(e, "symlink", errno);
    } else {
      if (owners()) ::fchownat(parent, name.c_str(), e.uid, e.gid, AT_SYMLINK_NOFOLLOW);
      const timespec t[2] = {to_timespec(e.atime_ns), to_timespec(e.mtime_ns)};
      ::utimensat(parent, name.c_str(), t, AT_SYMLINK_NOFOLLOW);
      ++r.symlinks;
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
        if (owners()) ::fchownat(fd, "", e.uid, e.gid, AT_EMPTY_PATH);
        ::syscall(nr::fchmodat2, fd, "", mode_of(e), AT_EMPTY_PATH);
        const timespec t[2] = {to_timespec(e.atime_ns), to_timespec(e.mtime_ns)};
        ::utimensat(fd, "", t, AT_EMPTY_PATH);
        ::close(fd);
      }
      ++r.other;
    }
    ::close(parent);
  }

  void set_xattrs(const tree_entry& e, int fd) {
    for (const auto& x : e.xattrs) {
      const std::string& name = trace_.string(x.name);
      if (!opt_.privilege.keep_privileged && privileged_xattr(name)) {
        ++r.withheld;
        continue;
      }
      const auto value = xattr_value(name, x.size, data_, content_key(e.path));
      if (::fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) == 0)
        ++r.xattrs;
      else
        error(e, "xattr " + name, errno);
    }
  }

  // chown before chmod: chown clears set-id bits. A new file already belongs to us, so the
  // common case needs neither call.
  void set_owner_mode_times(const tree_entry& e, int fd, bool chmod) {
    const bool chown = owners() && (e.uid != euid_ || e.gid != egid_);
    if (chown && ::fchown(fd, e.uid, e.gid) != 0) error(e, "chown", errno);
    if ((chmod || chown) && ::fchmod(fd, mode_of(e)) != 0) error(e, "chmod", errno);
    const timespec t[2] = {to_timespec(e.atime_ns), to_timespec(e.mtime_ns)};
    if (::futimens(fd, t) != 0) error(e, "set times", errno);
  }

  bool owners() const { return opt_.privilege.owners; }
  // The recorded permission bits, set-id ones only when kept (counted once per entry).
  mode_t mode_of(const tree_entry& e) {
    const mode_t m = replay_mode(e.mode & 07777, opt_.privilege);
    if (m != (e.mode & 07777)) ++r.withheld;
    return m;
  }

  trace_reader& trace_;
  const target_root& target_;
  const data_source& data_;
  const prepare_options& opt_;
  const mode_t umask_;
  const uid_t euid_ = ::geteuid();
  const gid_t egid_ = ::getegid();
  std::unique_ptr<uint8_t[]> buf_;
  std::string last_parent_;
  int last_root_ = -1;
};

void merge(prepare_result& into, const prepare_result& r) {
  into.files += r.files;
  into.dirs += r.dirs;
  into.symlinks += r.symlinks;
  into.hardlinks += r.hardlinks;
  into.other += r.other;
  into.skipped += r.skipped;
  into.bytes += r.bytes;
  into.xattrs += r.xattrs;
  into.withheld += r.withheld;
  into.errors += r.errors;
  into.first_errors.insert(into.first_errors.end(), r.first_errors.begin(),
                           r.first_errors.end());
}

// Entries beneath a path of options.in_place are there already.
bool kept_in_place(const prepare_options& options, const std::string& p) {
  for (const std::string& prefix : options.in_place)
    if (p.starts_with(prefix) && (p.size() == prefix.size() || p[prefix.size()] == '/'))
      return true;
  return false;
}

uint64_t round_up(uint64_t n, uint64_t unit) {
  return unit ? (n + unit - 1) / unit * unit : n;
}

}  // namespace

std::vector<space_need> tree_needs(trace_reader& trace, const target_root& target,
                                   const prepare_options& options) {
  // One file system a root: its block size rounds each file's data up.
  struct fs {
    dev_t dev;
    uint64_t unit;
  };
  std::vector<space_need> needs;
  std::vector<fs> of_root;  // parallel to needs
  std::unordered_map<uint32_t, bool> group_seen;
  for (const tree_entry& e : trace.tree()) {
    const std::string p = trace.placed_path(e.path);
    if (!options.in_place.empty() && kept_in_place(options, p)) continue;
    const auto at = target.locate(p);
    if (!at) continue;  // refused, and reported, by prepare itself
    size_t i = 0;
    while (i < needs.size() && needs[i].root != at->root) ++i;
    if (i == needs.size()) {
      struct statvfs v {};
      struct stat st {};
      if (::fstatvfs(at->root, &v) != 0 || ::fstat(at->root, &st) != 0) continue;
      needs.push_back({at->root, 0, 0});
      of_root.push_back({st.st_dev, v.f_frsize ? v.f_frsize : v.f_bsize});
    }
    if (e.link_group != 0 && S_ISREG(e.mode) && !group_seen.try_emplace(e.link_group).second)
      continue;  // another name of an inode counted already
    ++needs[i].inodes;
    if (!S_ISREG(e.mode)) continue;
    uint64_t data = 0;
    if (e.extents.empty()) {
      data = e.size;
    } else {
      for (const auto& x : e.extents)
        if (x.offset < e.size) data += std::min(x.length, e.size - x.offset);
    }
    needs[i].bytes += round_up(data, of_root[i].unit);
  }
  // Roots on one file system share its free space.
  std::vector<space_need> merged;
  std::vector<dev_t> devs;
  for (size_t i = 0; i < needs.size(); ++i) {
    size_t j = 0;
    while (j < devs.size() && devs[j] != of_root[i].dev) ++j;
    if (j == devs.size()) {
      devs.push_back(of_root[i].dev);
      merged.push_back(needs[i]);
    } else {
      merged[j].bytes += needs[i].bytes;
      merged[j].inodes += needs[i].inodes;
    }
  }
  return merged;
}

result<void> check_space(trace_reader& trace, const target_root& target,
                         const prepare_options& options) {
  const bool root = ::geteuid() == 0;  // the reserved blocks are ours too
  for (const space_need& n : tree_needs(trace, target, options)) {
    struct statvfs v {};
    if (::fstatvfs(n.root, &v) != 0) continue;
    const uint64_t unit = v.f_frsize ? v.f_frsize : v.f_bsize;
    const uint64_t free_bytes = (root ? v.f_bfree : v.f_bavail) * unit;
    if (n.bytes > free_bytes)
      return failure(
          "the initial tree needs {} bytes on the file system of {}, which has {} bytes free "
          "(--no-space-check to try anyway)",
          n.bytes, target.path_of(n.root), free_bytes);
    const uint64_t free_inodes = root ? v.f_ffree : v.f_favail;
    if (v.f_files != 0 && n.inodes > free_inodes)  // f_files 0: no fixed inode count (btrfs)
      return failure(
          "the initial tree needs {} inodes on the file system of {}, which has {} free "
          "(--no-space-check to try anyway)",
          n.inodes, target.path_of(n.root), free_inodes);
  }
  return {};
}

result<prepare_result> prepare_tree(trace_reader& trace, const target_root& target,
                                    const data_source& data, const prepare_options& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto& tree = trace.tree();
  if (options.space_check) FSRR_TRY(check_space(trace, target, options));
  const mode_t umask = ::umask(0);
  ::umask(umask);

  // Split the work by phase; a hard-link group's first name is created with the files.
  // Entries by their index in the tree.
  std::vector<uint32_t> dirs, leaves;
  std::vector<std::pair<uint32_t, uint32_t>> links;  // (name, first name)
  std::unordered_map<uint32_t, uint32_t> first_of_group;
  const auto in_place = [&](const tree_entry& e) {
    return !options.in_place.empty() && kept_in_place(options, trace.placed_path(e.path));
  };
  size_t kept = 0;
  auto it = tree.begin();  // in order: each entry decoded once
  for (uint32_t i = 0; i < tree.size(); ++i, ++it) {
    const tree_entry e = *it;
    if (in_place(e)) {
      ++kept;
      continue;
    }
    if (is_dir(e)) {
      dirs.push_back(i);
    } else if (e.link_group != 0 && S_ISREG(e.mode)) {
      auto [group, first] = first_of_group.try_emplace(e.link_group, i);
      if (first)
        leaves.push_back(i);
      else
        links.emplace_back(i, group->second);
    } else {
      leaves.push_back(i);
    }
  }

  const size_t total = tree.size() - kept;
  std::atomic<uint64_t> done{0};
  // Called from the main thread only: the callback need not be thread-safe.
  auto progress = [&](uint64_t n) {
    done.fetch_add(n);
    if (options.progress) options.progress(done.load(), total);
  };

  worker main(trace, target, data, options, umask);
  for (const uint32_t i : dirs) main.create(tree[i]);
  progress(dirs.size());

  // a thread per batch at most: a small tree is made by this one alone
  const unsigned nthreads = static_cast<unsigned>(std::clamp<size_t>(
      std::min<size_t>(std::thread::hardware_concurrency(), (leaves.size() + batch - 1) / batch), 1, 4));
  std::vector<std::unique_ptr<worker>> workers;
  for (unsigned t = 0; t < nthreads; ++t)
    workers.push_back(std::make_unique<worker>(trace, target, data, options, umask));
  std::atomic<size_t> next{0};
  auto work = [&](worker& w) {
    for (;;) {
      const size_t from = next.fetch_add(batch);
      if (from >= leaves.size()) return;
      const size_t to = std::min(leaves.size(), from + batch);
      for (size_t i = from; i < to; ++i) w.create(tree[leaves[i]]);
      if (&w == workers[0].get())
        progress(to - from);
      else
        done.fetch_add(to - from);
    }
  };
  {
    std::vector<std::jthread> threads;
    for (unsigned t = 1; t < nthreads; ++t) threads.emplace_back(work, std::ref(*workers[t]));
    work(*workers[0]);
  }
  for (const auto& w : workers) merge(main.r, w->r);

  for (const auto& [i, first] : links) main.create_link(tree[i], tree[first]);
  progress(links.size());
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) main.finish_dir(tree[*it]);

  prepare_result r = std::move(main.r);
  std::sort(r.first_errors.begin(), r.first_errors.end());
  if (r.first_errors.size() > 10) r.first_errors.resize(10);
  if (options.progress) options.progress(total, total);
  r.wall_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count());
  return r;
}

}  // namespace fsrr
