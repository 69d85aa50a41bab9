// The recording of cp -a by coreutils 9, modelled (see cp_model.h).
#include "cp_model.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "trace_error.h"

namespace fsrr::model {

namespace {

constexpr uint64_t cp_copy_size = 9223372035781033984ull;  // coreutils' "to the end" length
constexpr uint32_t acl_bytes = 28;                         // a minimal access ACL

int64_t ns_of(const timespec& t) {
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

timespec timespec_of(int64_t ns) {
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

// getdents64 results for `names` (plus "." and ".."), one entry per record, 32 KiB calls.
std::vector<int64_t> getdents_calls(const std::vector<std::string>& names) {
  auto rec = [](size_t len) { return static_cast<int64_t>((19 + len + 1 + 7) & ~size_t{7}); };
  std::vector<int64_t> calls;
  int64_t fill = rec(1) + rec(2);
  for (const auto& n : names) {
    if (fill + rec(n.size()) > 32768) {
      calls.push_back(fill);
      fill = 0;
    }
    fill += rec(n.size());
  }
  calls.push_back(fill);
  calls.push_back(0);
  return calls;
}

class cp_recording {
 public:
  cp_recording(const std::string& out, const source_tree& tree, const cp_options& o)
      : tree_(tree),
        w_(or_throw(trace_writer::create(out, header(o), replacing()))),
        ts_(o.start_ns),
        step_(o.step_ns) {
    t_ = w_.add_thread({1, 1, 0, w_.intern_string("cp"), 1});
    acl_access_ = w_.intern_string("system.posix_acl_access");
    acl_default_ = w_.intern_string("system.posix_acl_default");
  }

  void copy(const std::string& src, const std::string& dst) {
    for (size_t slash = src.find('/', 1); slash != std::string::npos;
         slash = src.find('/', slash + 1))
      snapshot(src.substr(0, slash));
    struct stat st;
    if (!tree_.lstat(src, st) || !S_ISDIR(st.st_mode))
      throw std::runtime_error(src + ": not a directory");
    event& probe = add(op::openat, -ENOENT);
    probe.path = w_.intern_path(dst);
    probe.flags = O_RDONLY | O_PATH | O_DIRECTORY;
    stat_path(src, src_file(st), AT_SYMLINK_NOFOLLOW);
    stat_path(dst, no_id, AT_SYMLINK_NOFOLLOW, -ENOENT);
    copy_dir(src, dst, st);
    add(op::exit);
  }

  void finish() {
    flush();
    or_throw(w_.finish());
  }

 private:
  static writer_options replacing() {
    writer_options w;
    w.overwrite = true;
    return w;
  }
  static header_info header(const cp_options& o) {
    header_info h;
    h.writer = o.writer;
    h.command = {"cp", "-a"};
    return h;
  }

  // The event is appended at the next add (or flush).
  event& add(op kind, int64_t result = 0) {
    flush();
    e_ = event{};
    e_.thread = t_;
    e_.kind = kind;
    e_.result = result;
    e_.ts = ts_ += step_;
    e_.dur = step_ / 2;
    staged_ = true;
    return e_;
  }
  void flush() {
    if (staged_) w_.append(e_);
    staged_ = false;
  }

  file_id src_file(const struct stat& st) {
    return w_.intern_file({st.st_dev, st.st_ino, 0, st.st_mode & S_IFMT});
  }
  file_id new_file(uint32_t type) { return w_.intern_file({1, ++next_ino_, 1, type}); }

  void snapshot(const std::string& p) {
    struct stat st;
    if (p.empty() || !tree_.lstat(p, st)) return;
    tree_entry t;
    t.path = w_.intern_path(p);
    t.mode = st.st_mode;
    t.uid = st.st_uid;
    t.gid = st.st_gid;
    t.size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
    t.allocated = t.size;
    t.atime_ns = ns_of(st.st_atim);
    t.mtime_ns = ns_of(st.st_mtim);
    t.ctime_ns = ns_of(st.st_ctim);
    t.nlink = static_cast<uint32_t>(st.st_nlink);
    t.file = src_file(st);
    w_.add_tree_entry(t);
  }

  void stat_path(const std::string& p, file_id f, uint32_t flags, int64_t result = 0) {
    event& e = add(op::newfstatat, result);
    e.path = w_.intern_path(p);
    e.file = f;
    e.flags = flags;
  }
  void stat_fd(int fd, const std::string& p, file_id f) {
    event& e = add(op::newfstatat);
    e.fd = fd;
    e.path = w_.intern_path(p);
    e.file = f;
    e.flags = AT_EMPTY_PATH;
  }
  void close(int fd, file_id f) {
    event& e = add(op::close);
    e.fd = fd;
    e.file = f;
  }

  void copy_dir(const std::string& src, const std::string& dst, const struct stat& st) {
    snapshot(src);
    const file_id in = src_file(st), out = new_file(S_IFDIR);
    event& mk = add(op::mkdirat);
    mk.path = w_.intern_path(dst);
    mk.mode = 0700;
    stat_path(dst, out, AT_SYMLINK_NOFOLLOW);
    event& od = add(op::openat, 3);
    od.path = w_.intern_path(src);
    od.file = in;
    od.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY;
    stat_fd(3, src, in);
    const std::vector<std::string> names = tree_.entries(src);
    for (const int64_t r : getdents_calls(names)) {
      event& gd = add(op::getdents64, r);
      gd.fd = 3;
      gd.file = in;
      gd.size = 32768;
    }
    close(3, in);
    for (const auto& n : names) {
      const std::string s = src + "/" + n, t = dst + "/" + n;
      struct stat cs;
      if (!tree_.lstat(s, cs)) continue;
      if (S_ISDIR(cs.st_mode)) {
        stat_path(s, src_file(cs), AT_SYMLINK_NOFOLLOW);
        copy_dir(s, t, cs);
      } else if (S_ISREG(cs.st_mode)) {
        copy_file(s, t, cs);
      } else {
        throw std::runtime_error(s + ": only regular files and directories are modelled");
      }
    }
    event& ut = add(op::utimensat);
    ut.path = w_.intern_path(dst);
    ut.file = out;
    ut.offset = ns_of(st.st_atim);
    ut.offset2 = ns_of(st.st_mtim);
    event& ch = add(op::fchownat);
    ch.path = w_.intern_path(dst);
    ch.file = out;
    ch.flags = AT_SYMLINK_NOFOLLOW;
    ch.aux = uint64_t{st.st_uid} << 32 | st.st_gid;
    for (int i = 0; i < 2; ++i) {
      event& l = add(op::llistxattr);
      l.path = w_.intern_path(src);
      l.file = in;
    }
    for (const string_id acl : {acl_access_, acl_default_}) {
      event& g = add(op::getxattr, -ENODATA);
      g.path = w_.intern_path(src);
      g.file = in;
      g.aux = acl;
      g.size = 132;
      stat_path(src, in, 0);
    }
    event& sx = add(op::setxattr);
    sx.path = w_.intern_path(dst);
    sx.file = out;
    sx.aux = acl_access_;
    sx.size = acl_bytes;
    sx.mode = acl_mode_present | (st.st_mode & 0777);
    event& rx = add(op::removexattr);
    rx.path = w_.intern_path(dst);
    rx.file = out;
    rx.aux = acl_default_;
  }

  void copy_file(const std::string& src, const std::string& dst, const struct stat& st) {
    snapshot(src);
    const file_id in = src_file(st), out = new_file(S_IFREG);
    const int64_t n = st.st_size;
    stat_path(src, in, AT_SYMLINK_NOFOLLOW);
    event& o1 = add(op::openat, 3);
    o1.path = w_.intern_path(src);
    o1.file = in;
    o1.flags = O_RDONLY | O_NOFOLLOW;
    stat_fd(3, src, in);
    event& o2 = add(op::openat, 4);
    o2.path = w_.intern_path(dst);
    o2.file = out;
    o2.flags = O_WRONLY | O_CREAT | O_EXCL;
    o2.mode = 0600;
    event& cl = add(op::ioctl, -EOPNOTSUPP);
    cl.fd = 4;
    cl.fd2 = 3;
    cl.file = out;
    cl.file2 = in;
    cl.aux = FICLONE;
    stat_fd(4, dst, out);
    event& fa = add(op::fadvise64);
    fa.fd = 3;
    fa.file = in;
    fa.flags = POSIX_FADV_SEQUENTIAL;
    for (const int64_t copied : {n, int64_t{0}}) {
      event& c = add(op::copy_file_range, copied);
      c.fd = 3;
      c.fd2 = 4;
      c.file = in;
      c.file2 = out;
      c.offset = c.offset2 = -1;  // NULL: at the fds' positions
      c.size = cp_copy_size;
      if (n == 0) break;
    }
    if (n == 0) {  // nothing copied: cp reads once to tell an empty file from /proc-like ones
      event& r = add(op::read);
      r.fd = 3;
      r.file = in;
      r.size = 131072;
    }
    event& ut = add(op::utimensat);
    ut.fd = 4;
    ut.path = w_.intern_path(dst);
    ut.file = out;
    ut.offset = ns_of(st.st_atim);
    ut.offset2 = ns_of(st.st_mtim);
    for (int i = 0; i < 2; ++i) {
      event& l = add(op::flistxattr);
      l.fd = 3;
      l.file = in;
    }
    event& g = add(op::fgetxattr, -ENODATA);
    g.fd = 3;
    g.file = in;
    g.aux = acl_access_;
    g.size = 132;
    stat_fd(3, src, in);
    event& sx = add(op::fsetxattr);
    sx.fd = 4;
    sx.file = out;
    sx.aux = acl_access_;
    sx.size = acl_bytes;
    sx.mode = acl_mode_present | (st.st_mode & 0777);  // how cp -a gives the copy its mode
    close(4, out);
    close(3, in);
  }

  const source_tree& tree_;
  trace_writer w_;
  thread_id t_;
  string_id acl_access_, acl_default_;
  event e_;
  bool staged_ = false;
  uint64_t ts_;
  uint64_t step_;
  uint64_t next_ino_ = 0;
};

}  // namespace

bool disk_tree::lstat(const std::string& path, struct stat& st) const {
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> disk_tree::entries(const std::string& dir) const {
  std::vector<std::pair<ino_t, std::string>> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* de = ::readdir(d))
      if (std::string n = de->d_name; n != "." && n != "..") found.emplace_back(de->d_ino, n);
    ::closedir(d);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& [ino, n] : found) names.push_back(std::move(n));
  return names;
}

numbered_tree::numbered_tree(std::string dir, std::vector<uint64_t> sizes, int64_t time_ns)
    : dir_(std::move(dir)), sizes_(std::move(sizes)), time_ns_(time_ns) {}

bool numbered_tree::lstat(const std::string& path, struct stat& st) const {
  st = {};
  st.st_dev = 1;
  st.st_nlink = 1;
  st.st_atim = st.st_mtim = st.st_ctim = timespec_of(time_ns_);
  if (path == dir_) {
    st.st_mode = S_IFDIR | 0755;
    st.st_ino = 2;
    st.st_nlink = 2;
    return true;
  }
  const std::string prefix = dir_ + "/f";
  if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return false;
  size_t i = 0;
  for (size_t k = prefix.size(); k < path.size(); ++k) {
    if (path[k] < '0' || path[k] > '9') return false;
    i = i * 10 + static_cast<size_t>(path[k] - '0');
  }
  if (i >= sizes_.size() || path != prefix + std::to_string(i)) return false;
  st.st_mode = S_IFREG | 0644;
  st.st_ino = 100 + i;
  st.st_size = static_cast<off_t>(sizes_[i]);
  return true;
}

std::vector<std::string> numbered_tree::entries(const std::string& dir) const {
  std::vector<std::string> names;
  if (dir == dir_)
    for (size_t i = 0; i < sizes_.size(); ++i) names.push_back(fmt::format("f{}", i));
  return names;
}

void write_cp_a(const std::string& out, const source_tree& tree, const std::string& src,
                const std::string& dst, const cp_options& options) {
  cp_recording r(out, tree, options);
  r.copy(src, dst);
  r.finish();
}

}  // namespace fsrr::model
