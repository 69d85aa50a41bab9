// `fsrr import strace`: each call of an op fsrr knows, by its family of syscalls (a row of
// importer::families()), as the recorder would have recorded it.
#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>

#include "strace_import.h"
#include "strace_importer.h"

namespace fsrr::transform::strace {

const std::map<std::string_view, uint64_t> access_modes = {
    {"F_OK", 0}, {"R_OK", 4}, {"W_OK", 2}, {"X_OK", 1}};

// One call of an op fsrr knows, as the recorder would have it: its family's handler, or its
// fields as the log gives them.
void importer::handle(op k, const call& c) {
  const int64_t res = result_of(c);
  one_call x{*this, c, k, c.pid, res, res > 0 ? static_cast<uint64_t>(res) : 0, {}};
  x.e.kind = k;
  x.e.result = res;
  if (const family_handler run = families()[static_cast<size_t>(k)]) return (this->*run)(x);
  x.emit();
}

// A row per family of syscalls: the calls it parses alike.
const std::array<importer::family_handler, op_count>& importer::families() {
  struct family {
    std::initializer_list<op> ops;
    family_handler run;
  };
  static const auto table = [] {
    const family rows[] = {
        {{op::open, op::openat, op::openat2, op::creat}, &importer::open_call},
        {{op::close}, &importer::close_call},
        {{op::read, op::pread64, op::readv, op::preadv, op::preadv2, op::write, op::pwrite64,
          op::writev, op::pwritev, op::pwritev2},
         &importer::read_write},
        {{op::lseek}, &importer::seek},
        {{op::copy_file_range, op::sendfile, op::splice}, &importer::copy_range},
        {{op::ioctl}, &importer::ioctl_call},
        {{op::fadvise64, op::readahead}, &importer::advise},
        {{op::getdents, op::getdents64}, &importer::list_dir},
        {{op::ftruncate, op::fallocate, op::sync_file_range}, &importer::fd_range},
        {{op::truncate}, &importer::truncate_path},
        {{op::mkdir, op::mkdirat, op::mknod, op::mknodat}, &importer::make_node},
        {{op::rmdir, op::unlink, op::unlinkat}, &importer::remove_name},
        {{op::rename, op::renameat, op::renameat2, op::link, op::linkat}, &importer::rename_link},
        {{op::symlink, op::symlinkat}, &importer::make_symlink},
        {{op::stat, op::lstat, op::statfs, op::access, op::readlink}, &importer::path_query},
        {{op::newfstatat, op::statx, op::faccessat, op::faccessat2, op::readlinkat, op::fchmodat,
          op::fchmodat2, op::fchownat, op::utimensat},
         &importer::at_call},
        {{op::fstat, op::fstatfs, op::fsync, op::fdatasync, op::syncfs, op::fchdir, op::flock,
          op::fchmod, op::fchown},
         &importer::fd_call},
        {{op::chmod, op::chown, op::lchown}, &importer::path_owner_mode},
        {{op::setxattr, op::lsetxattr, op::getxattr, op::lgetxattr, op::listxattr, op::llistxattr,
          op::removexattr, op::lremovexattr, op::fsetxattr, op::fgetxattr, op::flistxattr,
          op::fremovexattr},
         &importer::xattr_call},
        {{op::dup, op::dup2, op::dup3, op::fcntl}, &importer::dup_fcntl},
        {{op::close_range}, &importer::close_range_call},
        {{op::chdir}, &importer::chdir_call},
        {{op::clone, op::clone3, op::fork, op::vfork}, &importer::clone_call},
        {{op::execve, op::execveat}, &importer::exec_call},
        {{op::mmap}, &importer::mmap_call},
        {{op::io_uring_setup, op::io_uring_enter, op::io_setup, op::io_submit},
         &importer::engine_call},
    };
    std::array<family_handler, op_count> t{};
    for (const family& f : rows)
      for (const op k : f.ops) t[static_cast<size_t>(k)] = f.run;
    return t;
  }();
  return table;
}

// ---- the families ------------------------------------------------------------------------

void importer::open_call(one_call& x) {
  const op k = x.k;
  event& e = x.e;
  const bool dirfd = k == op::openat || k == op::openat2;
  std::string path = x.at(dirfd ? 0 : SIZE_MAX, dirfd ? 1 : 0);
  uint64_t flags = 0;
  if (k == op::creat) {
    flags = O_CREAT | O_WRONLY | O_TRUNC;
    e.mode = static_cast<uint32_t>(x.num(1));
  } else if (k == op::openat2) {
    const std::string how = x.arg(2);
    const size_t f = how.find("flags="), m = how.find("mode=");
    if (f != std::string::npos)
      flags =
          bits(std::string_view(how).substr(f + 6, how.find_first_of(",}", f) - f - 6), open_flags);
    if (m != std::string::npos)
      e.mode = static_cast<uint32_t>(number(std::string_view(how).substr(m + 5)));
  } else {
    flags = bits(x.arg(dirfd ? 2 : 1), open_flags);
    e.mode = static_cast<uint32_t>(x.num(dirfd ? 3 : 2));
  }
  if (k != op::creat) e.flags = static_cast<uint32_t>(flags);
  if (x.res < 0) {
    if (x.res == -ENXIO || x.res == -ENODEV) return nonfile(k, obj::other);
    if (x.on_path(path, true)) x.emit();
    return;
  }
  const std::string shown = result_annotation(x.c);
  open_file o = shown.empty() ? open_file{obj::storage, path} : classify(shown);
  o.append = flags & O_APPEND;
  o.cloexec = flags & O_CLOEXEC;
  if (o.kind != obj::storage) {
    fds(x.pid).insert_or_assign(x.res, o);
    return nonfile(k, o.kind);
  }
  path = o.path;
  const bool first = !found_.count(path);
  saw(path, !(first && (flags & O_CREAT)));
  if (flags & O_DIRECTORY) dirs_.insert(path);
  if (flags & O_TRUNC) sizes_[path] = 0;
  o.file = file_at(path, flags & O_DIRECTORY ? S_IFDIR : S_IFREG);
  e.path = w_.intern_path(path);
  e.file = o.file;
  fds(x.pid).insert_or_assign(x.res, o);
  x.emit();
}

void importer::close_call(one_call& x) {
  const fd_text f = fd_arg(x.arg(0));
  if (x.on_fd(0))
    x.emit();
  else
    nonfile(x.k, file_of(x.pid, f).kind);
  if (x.res != -EBADF) fds(x.pid).erase(f.fd);
}

void importer::read_write(one_call& x) {
  const op k = x.k;
  event& e = x.e;
  const bool vec = k == op::readv || k == op::preadv || k == op::preadv2 || k == op::writev ||
                   k == op::pwritev || k == op::pwritev2;
  const bool positioned = k == op::pread64 || k == op::pwrite64 || k == op::preadv ||
                          k == op::pwritev || k == op::preadv2 || k == op::pwritev2;
  const bool out = info(k).cls == op_class::write;
  const fd_text f = fd_arg(x.arg(0));
  open_file& o = file_of(x.pid, f);
  e.size = vec ? iov_bytes(x.arg(1)) : static_cast<uint64_t>(x.num(2));
  if (vec) e.aux = static_cast<uint64_t>(x.num(2));
  if (o.kind != obj::storage) {  // a pipe's or a socket's: a stream event where -yy tells which
    nonfile(k, o.kind);
    const file_id stream = out ? o.stream_out : o.stream_in;
    if (x.moved && stream) {
      event s;
      s.kind = out ? op::stream_write : op::stream_read;
      s.result = x.res;
      s.fd = static_cast<int32_t>(f.fd);
      s.file = stream;
      s.size = e.size;
      s.aux = static_cast<uint64_t>(k);
      put(x.pid, x.c.ts, x.c.dur, s);
    }
    return;
  }
  e.fd = static_cast<int32_t>(f.fd);
  e.file = o.file;
  int64_t off = positioned ? x.num(3) : -1;
  if (off < 0) off = out && o.append ? static_cast<int64_t>(sizes_[o.path]) : o.pos;
  e.offset = off;
  if (k == op::preadv2 || k == op::pwritev2) e.flags = static_cast<uint32_t>(x.num(4));
  if (!positioned || x.num(3) < 0) o.pos = off + static_cast<int64_t>(x.moved);
  if (out) {
    uint64_t& size = sizes_[o.path];
    size = std::max(size, static_cast<uint64_t>(off) + x.moved);
  } else {
    extent_of(o.path, static_cast<uint64_t>(off) + x.moved);
  }
  x.emit();
}

void importer::seek(one_call& x) {
  open_file* o = x.on_fd(0);
  if (!o) return x.not_file(0);
  x.e.offset = x.num(1);
  static const std::map<std::string_view, uint64_t> whence = {
      {"SEEK_SET", 0}, {"SEEK_CUR", 1}, {"SEEK_END", 2}, {"SEEK_DATA", 3}, {"SEEK_HOLE", 4}};
  x.e.aux = bits(x.arg(2), whence);
  if (x.res >= 0) o->pos = x.res;
  x.emit();
}

void importer::copy_range(one_call& x) {
  event& e = x.e;
  const bool sf = x.k == op::sendfile;
  open_file* a = x.on_fd(0);
  open_file* b = x.on_fd(sf ? 1 : 2, true);
  if (!a && !b) return x.not_file(0);
  const auto moved = static_cast<int64_t>(x.moved);
  if (sf) {
    e.offset = pointed(x.arg(2));
    e.size = static_cast<uint64_t>(x.num(3));
    if (a) a->pos += moved;
    if (b && e.offset < 0) b->pos += moved;
  } else {
    e.offset = pointed(x.arg(1));
    e.offset2 = pointed(x.arg(3));
    e.size = static_cast<uint64_t>(x.num(4));
    e.flags = x.flags(5, {});
    if (a && e.offset < 0) a->pos += moved;
    if (b && e.offset2 < 0) b->pos += moved;
  }
  x.emit();
}

void importer::ioctl_call(one_call& x) {
  event& e = x.e;
  if (!x.on_fd(0)) return x.not_file(0);
  const std::string cmd = x.arg(1);
  if (cmd.find("FICLONERANGE") != std::string::npos) {
    e.aux = FICLONERANGE;
    const std::string r = x.arg(2);
    const auto field = [&](const char* name) {
      const size_t p = r.find(name);
      return p == std::string::npos ? int64_t{0}
                                    : number(std::string_view(r).substr(p + std::strlen(name)));
    };
    const int64_t src = field("src_fd=");
    if (auto it = fds(x.pid).find(src); it != fds(x.pid).end() && it->second.kind == obj::storage)
      e.fd2 = static_cast<int32_t>(src), e.file2 = it->second.file;
    e.offset = field("src_offset=");
    e.size = static_cast<uint64_t>(field("src_length="));
    e.offset2 = field("dest_offset=");
  } else if (cmd.find("FICLONE") != std::string::npos) {
    e.aux = FICLONE;
    x.on_fd(2, true);
  } else {
    e.aux = static_cast<uint64_t>(number(cmd));
  }
  x.emit();
}

void importer::advise(one_call& x) {
  if (!x.on_fd(0)) return x.not_file(0);
  x.e.offset = x.num(1);
  x.e.size = static_cast<uint64_t>(x.num(2));
  static const std::map<std::string_view, uint64_t> advice = {
      {"POSIX_FADV_NORMAL", 0},   {"POSIX_FADV_RANDOM", 1},   {"POSIX_FADV_SEQUENTIAL", 2},
      {"POSIX_FADV_WILLNEED", 3}, {"POSIX_FADV_DONTNEED", 4}, {"POSIX_FADV_NOREUSE", 5}};
  if (x.k == op::fadvise64) x.e.flags = x.flags(3, advice);
  x.emit();
}

void importer::list_dir(one_call& x) {
  open_file* o = x.on_fd(0);
  if (!o) return x.not_file(0);
  dirs_.insert(o->path);
  x.e.size = static_cast<uint64_t>(x.num(2));
  x.emit();
}

void importer::fd_range(one_call& x) {
  event& e = x.e;
  open_file* o = x.on_fd(0);
  if (!o) return x.not_file(0);
  if (x.k == op::ftruncate) {
    e.size = static_cast<uint64_t>(x.num(1));
    if (x.res == 0) sizes_[o->path] = e.size;
  } else if (x.k == op::fallocate) {
    static const std::map<std::string_view, uint64_t> modes = {
        {"FALLOC_FL_KEEP_SIZE", 1},       {"FALLOC_FL_PUNCH_HOLE", 2},
        {"FALLOC_FL_COLLAPSE_RANGE", 8},  {"FALLOC_FL_ZERO_RANGE", 0x10},
        {"FALLOC_FL_INSERT_RANGE", 0x20}, {"FALLOC_FL_UNSHARE_RANGE", 0x40}};
    e.flags = x.flags(1, modes);
    e.offset = x.num(2);
    e.size = static_cast<uint64_t>(x.num(3));
  } else {
    e.offset = x.num(1);
    e.size = static_cast<uint64_t>(x.num(2));
  }
  x.emit();
}

void importer::truncate_path(one_call& x) {
  if (!x.on_path(x.at(SIZE_MAX, 0), true)) return;
  x.e.size = static_cast<uint64_t>(x.num(1));
  x.emit();
}

void importer::make_node(one_call& x) {
  const op k = x.k;
  const bool d = k == op::mkdirat || k == op::mknodat;
  const std::string path = x.at(d ? 0 : SIZE_MAX, d ? 1 : 0);
  if (!x.on_path(path, false)) return;
  x.e.mode = static_cast<uint32_t>(x.num(d ? 2 : 1));
  if (k == op::mkdir || k == op::mkdirat) dirs_.insert(path);
  x.emit();
}

void importer::remove_name(one_call& x) {
  const bool d = x.k == op::unlinkat;
  const std::string path = x.at(d ? 0 : SIZE_MAX, d ? 1 : 0);
  if (!x.on_path(path, true)) return;
  if (d) x.e.flags = x.flags(2, at_flags);
  if (x.res == 0) file_at_.erase(path);
  x.emit();
}

void importer::rename_link(one_call& x) {
  const op k = x.k;
  const bool d = k != op::rename && k != op::link;
  const std::string from = x.at(d ? 0 : SIZE_MAX, d ? 1 : 0);
  const std::string to = x.at(d ? 2 : SIZE_MAX, d ? 3 : 1);
  if (pseudo(from) || pseudo(to)) return nonfile(k, obj::other);
  x.on_path(from, true);
  x.e.path2 = w_.intern_path(to);
  if (k == op::renameat2 || k == op::linkat) x.e.flags = x.flags(4, at_flags);
  if (x.res == 0) {
    const bool moves = k == op::rename || k == op::renameat || k == op::renameat2;
    found_.try_emplace(to);  // made here, whatever was there
    std::vector<std::pair<std::string, file_id>> under;
    for (const auto& [p, f] : file_at_)
      if (p == from || (moves && p.compare(0, from.size() + 1, from + "/") == 0))
        under.emplace_back(p, f);
    for (const auto& [p, f] : under) {
      file_at_[to + p.substr(from.size())] = f;
      if (moves) file_at_.erase(p);
    }
    if (moves && dirs_.count(from)) dirs_.insert(to);
  }
  x.emit();
}

void importer::make_symlink(one_call& x) {
  const bool d = x.k == op::symlinkat;
  const std::string path = x.at(d ? 1 : SIZE_MAX, d ? 2 : 1);
  if (!x.on_path(path, false)) return;
  x.e.aux = w_.intern_string(unquote(x.arg(0)));
  x.emit();
}

// A readlink's result: the link and its target, as found.
void importer::link_target(const std::string& path, const std::string& target) {
  found_[path].target = target;
  found_[path].mode = S_IFLNK | 0777;
}

void importer::path_query(one_call& x) {
  const op k = x.k;
  const std::string path = x.at(SIZE_MAX, 0);
  if (!x.on_path(path, true)) return;
  if (k == op::stat || k == op::lstat) stat_of(path, x.arg(1));
  if (k == op::access) x.e.mode = x.flags(1, access_modes);
  if (k == op::readlink) {
    x.e.size = static_cast<uint64_t>(x.num(2));
    if (x.res > 0) link_target(path, unquote(x.arg(1)));
  }
  x.emit();
}

// The *at calls that take a dirfd and a name, or (AT_EMPTY_PATH, utimensat's NULL) an fd.
void importer::at_call(one_call& x) {
  const op k = x.k;
  const std::string name = unquote(x.arg(1));
  if (name.empty() || x.arg(1) == "NULL") {  // the fd's own file
    open_file* o = x.on_fd(0);
    if (!o) return x.not_file(0);
    x.e.path = w_.intern_path(o->path);
    if (k == op::newfstatat) stat_of(o->path, x.arg(2));
  } else {
    const std::string path = x.at(0, 1);
    if (!x.on_path(path, true)) return;
    x.e.fd = -1;
    if (k == op::newfstatat || k == op::statx) stat_of(path, x.arg(k == op::statx ? 4 : 2));
    if (k == op::readlinkat && x.res > 0) link_target(path, unquote(x.arg(2)));
  }
  at_call_fields(x);
  x.emit();
}

void importer::at_call_fields(one_call& x) {
  event& e = x.e;
  switch (x.k) {
    case op::newfstatat:
      e.flags = x.flags(3, at_flags);
      break;
    case op::statx:
      e.flags = x.flags(2, at_flags);
      e.aux = static_cast<uint64_t>(x.num(3));
      break;
    case op::faccessat2:
      e.flags = x.flags(3, at_flags);
      [[fallthrough]];
    case op::faccessat:
      e.mode = x.flags(2, access_modes);
      break;
    case op::readlinkat:
      e.size = static_cast<uint64_t>(x.num(3));
      break;
    case op::fchmodat:
    case op::fchmodat2:
      e.mode = static_cast<uint32_t>(x.num(2));
      break;
    case op::fchownat:
      e.aux = x.owner(2);
      e.flags = x.flags(4, at_flags);
      break;
    case op::utimensat:
      utimensat_times(x.arg(2), e);
      e.flags = x.flags(3, at_flags);
      break;
    default:
      break;
  }
}

// "[{tv_sec=.., tv_nsec=..}, UTIME_OMIT]", "NULL": the two times as the recorder has them.
void importer::utimensat_times(const std::string& times, event& e) {
  const auto one = [&](size_t from) -> int64_t {
    const std::string_view t = std::string_view(times).substr(from);
    if (t.substr(0, 10) == "UTIME_OMIT") return time_omit;
    if (t.substr(0, 9) == "UTIME_NOW") return time_now;
    const size_t s = t.find("tv_sec="), n = t.find("tv_nsec=");
    if (s == std::string_view::npos) return time_now;
    return number(t.substr(s + 7)) * 1'000'000'000 +
           (n == std::string_view::npos ? 0 : number(t.substr(n + 8)));
  };
  if (times == "NULL") {
    e.offset = e.offset2 = time_now;
    return;
  }
  const size_t second =
      times.find(", ", times.find('}') == std::string::npos ? 1 : times.find('}'));
  e.offset = one(1);
  e.offset2 = second == std::string::npos ? e.offset : one(second + 2);
}

void importer::fd_call(one_call& x) {
  const op k = x.k;
  open_file* o = x.on_fd(0);
  if (!o) return x.not_file(0);
  if (k == op::fstat) stat_of(o->path, x.arg(1));
  if (k == op::fchmod) x.e.mode = static_cast<uint32_t>(x.num(1));
  if (k == op::fchown) x.e.aux = x.owner(1);
  if (k == op::flock)
    x.e.flags = x.flags(1, {{"LOCK_SH", 1}, {"LOCK_EX", 2}, {"LOCK_NB", 4}, {"LOCK_UN", 8}});
  if (k == op::fchdir && x.res == 0) thread(x.pid).cwd = o->path;
  x.emit();
}

void importer::path_owner_mode(one_call& x) {
  if (!x.on_path(x.at(SIZE_MAX, 0), true)) return;
  if (x.k == op::chmod)
    x.e.mode = static_cast<uint32_t>(x.num(1));
  else
    x.e.aux = x.owner(1);
  x.emit();
}

void importer::xattr_call(one_call& x) {
  const op k = x.k;
  event& e = x.e;
  const bool by_fd =
      k == op::fsetxattr || k == op::fgetxattr || k == op::flistxattr || k == op::fremovexattr;
  if (by_fd) {
    if (!x.on_fd(0)) return x.not_file(0);
  } else if (!x.on_path(x.at(SIZE_MAX, 0), true)) {
    return;
  }
  const bool list = k == op::listxattr || k == op::llistxattr || k == op::flistxattr;
  const bool get = k == op::getxattr || k == op::lgetxattr || k == op::fgetxattr;
  if (!list) e.aux = w_.intern_string(unquote(x.arg(1)));
  // what the file had before the program changed it: its names and sizes, where shown
  const std::string target = by_fd ? file_of(x.pid, fd_arg(x.arg(0))).path : x.at(SIZE_MAX, 0);
  if (auto f = found_.find(target); f != found_.end() && f->second.existed && x.res > 0) {
    if (list && x.arg(1).find('"') != std::string::npos) {  // not the size probe (NULL)
      const std::string names = unquote(x.arg(1));
      for (size_t p = 0; p < names.size();) {
        const size_t z = names.find('\0', p);
        const std::string n = names.substr(p, z == std::string::npos ? std::string::npos : z - p);
        if (!n.empty()) f->second.xattrs.try_emplace(n, 0);
        if (z == std::string::npos) break;
        p = z + 1;
      }
    } else if (get) {
      const auto it = f->second.xattrs.find(unquote(x.arg(1)));
      if (it != f->second.xattrs.end() && !it->second) it->second = static_cast<uint32_t>(x.res);
    }
  }
  if (list) {
    e.size = static_cast<uint64_t>(x.num(2));
  } else if (k == op::setxattr || k == op::lsetxattr || k == op::fsetxattr) {
    e.size = static_cast<uint64_t>(x.num(3));
    e.flags = x.flags(4, {{"XATTR_CREATE", 1}, {"XATTR_REPLACE", 2}});
  } else if (get) {
    e.size = static_cast<uint64_t>(x.num(3));
  }
  x.emit();
}

}  // namespace fsrr::transform::strace
