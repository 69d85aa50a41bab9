// The path-based families. Ops that act on a name without following it use the parent
// directory (opened confined, cached per thread) and the last component; ops that follow a
// final symlink open it confined with O_PATH and act on that fd, so a symlink in the target
// can never lead outside. Where a no-follow call gives the same answer for anything but a
// symlink, it is tried first and the O_PATH detour is taken only for a symlink.
#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "op_dispatch.h"
#include "prepare.h"
#include "syscall_result.h"
#include "syscall_nr.h"
#include "xattr_value.h"

namespace fsrr {
namespace {

std::atomic<bool> have_xattrat{true};

std::string proc_fd(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

timespec to_timespec(int64_t ns) {
  if (ns == time_now) return {0, UTIME_NOW};
  if (ns == time_omit) return {0, UTIME_OMIT};
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

bool follows(const event& e) {
  switch (e.kind) {
    case op::lstat:
    case op::lchown:
    case op::lsetxattr:
    case op::lgetxattr:
    case op::llistxattr:
    case op::lremovexattr:
      return false;
    case op::newfstatat:
    case op::statx:
    case op::fchmodat2:
    case op::fchownat:
    case op::utimensat:
    case op::faccessat2:
    case op::setxattrat:
    case op::getxattrat:
    case op::listxattrat:
    case op::removexattrat:
    case op::file_getattr:
    case op::file_setattr:
      return !(e.flags & AT_SYMLINK_NOFOLLOW);
    default:
      return true;
  }
}

// The *xattrat ops, whose flags hold at_flags and the xattr flags (ops.def).
bool xattrat_op(op k) {
  return k == op::setxattrat || k == op::getxattrat || k == op::listxattrat ||
         k == op::removexattrat;
}

// A generated ACL (entries {u16 tag, u16 perm, u32 id} after a 4-byte header) given the
// permission bits the recording saw: owner, group-or-mask and other (acl_mode_present), so the
// file's mode comes out as in the recording: cp -a sets a copy's mode this way.
void give_acl_mode(std::vector<uint8_t>& v, uint32_t mode) {
  constexpr uint16_t user_obj = 1, group_obj = 4, mask = 0x10, other = 0x20;
  if (v.size() < 4 || (v.size() - 4) % 8 != 0) return;
  auto tag_at = [&](size_t at) {
    uint16_t tag;
    std::memcpy(&tag, &v[at], 2);
    return tag;
  };
  bool masked = false;
  for (size_t at = 4; at < v.size(); at += 8) masked |= tag_at(at) == mask;
  for (size_t at = 4; at < v.size(); at += 8) {
    const uint16_t tag = tag_at(at);
    uint16_t perm;
    if (tag == user_obj)
      perm = (mode >> 6) & 7;
    else if (tag == mask || (tag == group_obj && !masked))
      perm = (mode >> 3) & 7;
    else if (tag == other)
      perm = mode & 7;
    else
      continue;
    std::memcpy(&v[at + 2], &perm, 2);
  }
}

// One path component that names an entry of its directory.
bool plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

// The recorded object is known and no symlink: following a final symlink or not is the same.
bool no_symlink(const work_item& w) {
  return w.ftype != 0 && !S_ISLNK(w.ftype);
}

// The call was made on an fd rather than a path (fstat-like, AT_EMPTY_PATH, futimens).
bool on_fd(const event& e) {
  return has(e.kind, F_FD) && e.fd >= 0;
}

}  // namespace

int64_t op_runner::truncate_path(const work_item& w) {
  owned_fd f{open_path(w.p1, O_WRONLY | O_NONBLOCK | O_NOCTTY)};
  if (f.fd < 0) return f.fd;
  return sys(::ftruncate(f.fd, static_cast<off_t>(w.ev.size)));
}

int64_t op_runner::name_op(const work_item& w) {
  const event& e = w.ev;
  const int d1 = dir_fd(w.p1);
  if (d1 < 0) return d1;
  const char* n1 = w.p1->name();
  int64_t r;
  switch (e.kind) {
    case op::mkdir:
    case op::mkdirat:
      return sys(::mkdirat(d1, n1, mode_of(e)));
    case op::mknod:
    case op::mknodat:
      if (S_ISCHR(e.mode) || S_ISBLK(e.mode)) return not_issued;  // never create devices
      return sys(::mknodat(d1, n1, mode_of(e), 0));
    case op::bind:  // the socket's file, without a socket
      return sys(::mknodat(d1, n1, S_IFSOCK | (e.mode & 07777), 0));
    case op::rmdir:
      r = sys(::unlinkat(d1, n1, AT_REMOVEDIR));
      break;
    case op::unlink:
      r = sys(::unlinkat(d1, n1, 0));
      break;
    case op::unlinkat:
      r = sys(::unlinkat(d1, n1, static_cast<int>(e.flags & AT_REMOVEDIR)));
      break;
    case op::symlink:
    case op::symlinkat:
      if (!w.text) return -EINVAL;
      return sys(::symlinkat(w.text->c_str(), d1, n1));
    case op::rename:
    case op::renameat:
    case op::renameat2:
    case op::link:
    case op::linkat: {
      if (!w.p2) return -EINVAL;
      const bool rename = e.kind != op::link && e.kind != op::linkat;
      const bool follow_src = !rename && (e.flags & AT_SYMLINK_FOLLOW);
      // The second lookup may take the first one's cache slot: keep the first fd alive.
      owned_fd hold{-1};
      int src = d1;
      if (follow_src) {  // follow confined, then link that fd
        hold.fd = open_path(w.p1, O_PATH);
        if (hold.fd < 0) return hold.fd;
        src = hold.fd;
      } else if (w.p2->parent != w.p1->parent &&
                 w.p2->parent % dir_cache_size == w.p1->parent % dir_cache_size) {
        hold.fd = ::dup(d1);
        src = hold.fd;
      }
      const int d2 = dir_fd(w.p2);
      if (d2 < 0) return d2;
      const char* n2 = w.p2->name();
      if (!rename)
        return sys(follow_src ? ::linkat(src, "", d2, n2, AT_EMPTY_PATH)
                              : ::linkat(src, n1, d2, n2, 0));
      // A whiteout is a device node (0:0), and a replay never creates devices.
      r = sys(::renameat2(src, n1, d2, n2, e.flags & ~RENAME_WHITEOUT));
      break;
    }
    default:
      return not_issued;
  }
  if (r == 0 && w.dir_change) s_.namespace_gen.fetch_add(1, std::memory_order_release);
  return r;
}

int64_t op_runner::meta_op(const work_item& w) {
  const event& e = w.ev;
  struct stat st;
  if (on_fd(e) && (e.kind == op::newfstatat || e.kind == op::statx)) {
    const int fd = fd_of(w.fx.h1);
    if (fd < 0) return -EBADF;
    if (e.kind == op::newfstatat) return sys(::fstatat(fd, "", &st, AT_EMPTY_PATH));
    struct statx sx;
    return sys(::statx(fd, "", AT_EMPTY_PATH | (e.flags & AT_STATX_SYNC_TYPE),
                       static_cast<unsigned>(e.aux), &sx));
  }
  if (e.kind == op::fstat || e.kind == op::fstatfs) return fd_meta(w);
  switch (e.kind) {
    case op::stat:
    case op::lstat:
    case op::newfstatat:
    case op::statx: {
      const bool sx = e.kind == op::statx;
      const unsigned mask = static_cast<unsigned>(e.aux) | STATX_TYPE;
      const int sync = static_cast<int>(e.flags & AT_STATX_SYNC_TYPE);
      struct statx x;
      int64_t r;
      bool link;
      const int d = w.p1 && w.p1->ok && w.p1->is_root() ? -EBUSY : dir_fd(w.p1);
      if (d == -EBUSY) {  // the root itself
        owned_fd f{open_path(w.p1, O_PATH)};
        if (f.fd < 0) return f.fd;
        return sx ? sys(::statx(f.fd, "", AT_EMPTY_PATH | sync, mask, &x))
                  : sys(::fstatat(f.fd, "", &st, AT_EMPTY_PATH));
      }
      // A missing parent fails the call as it failed in the recording, without issuing it: a
      // walk from the root would not be confined.
      if (d < 0) return d;
      if (sx) {
        r = sys(::statx(d, w.p1->name(), AT_SYMLINK_NOFOLLOW | sync, mask, &x));
        link = r == 0 && S_ISLNK(x.stx_mode);
      } else {
        r = sys(::fstatat(d, w.p1->name(), &st, AT_SYMLINK_NOFOLLOW));
        link = r == 0 && S_ISLNK(st.st_mode);
      }
      if (!link || !follows(e)) return r;
      owned_fd f{open_path(w.p1, O_PATH)};
      if (f.fd < 0) return f.fd;
      return sx ? sys(::statx(f.fd, "", AT_EMPTY_PATH | sync, mask, &x))
                : sys(::fstatat(f.fd, "", &st, AT_EMPTY_PATH));
    }
    case op::statfs: {
      struct statfs sf;
      // statfs has no *at form: from the confined parent as working directory, on a name that
      // is not a symlink (or not there at all).
      if (own_cwd_ && w.p1 && w.p1->ok && !w.p1->is_root() && plain_name(w.p1->name())) {
        const int d = dir_fd(w.p1);
        if (d < 0) return d;
        // Checked rather than taken from the trace: statfs follows what it finds.
        const bool plain = ::fstatat(d, w.p1->name(), &st, AT_SYMLINK_NOFOLLOW) == 0
                               ? !S_ISLNK(st.st_mode)
                               : errno == ENOENT;
        if (plain) {
          if (const int r = enter_dir(w.p1); r < 0) return r;
          return sys(::statfs(w.p1->name(), &sf));
        }
      }
      owned_fd f{open_path(w.p1, O_PATH)};
      if (f.fd < 0) return f.fd;
      return sys(::fstatfs(f.fd, &sf));
    }
    case op::access:
    case op::faccessat:
    case op::faccessat2: {
      const int mode = static_cast<int>(e.mode), how = static_cast<int>(e.flags & AT_EACCESS);
      if (w.p1 && w.p1->ok && !w.p1->is_root()) {
        const int d = dir_fd(w.p1);
        if (d < 0) return d;  // as for stat: never an unconfined walk
        const int64_t r =
            sys(::syscall(SYS_faccessat2, d, w.p1->name(), mode, how | AT_SYMLINK_NOFOLLOW));
        // Nothing there is nothing there, followed or not.
        if (!follows(e) || no_symlink(w) || r == -ENOENT) return r;
      }
      owned_fd f{open_path(w.p1, O_PATH | (follows(e) ? 0 : O_NOFOLLOW))};
      if (f.fd < 0) return f.fd;
      const int flags = AT_EMPTY_PATH | static_cast<int>(e.flags & AT_EACCESS);
      return sys(::syscall(SYS_faccessat2, f.fd, "", static_cast<int>(e.mode), flags));
    }
    case op::file_getattr:
      return file_attr_op(w);
    case op::readlink:
    case op::readlinkat: {
      const int d = dir_fd(w.p1);
      if (d < 0) return d;
      const size_t n = std::min<uint64_t>(e.size, s_.sink.size());
      return sys(::readlinkat(d, w.p1->name(), reinterpret_cast<char*>(s_.sink.data()), n));
    }
    default:
      return not_issued;
  }
}

int64_t op_runner::attr_op(const work_item& w) {
  const event& e = w.ev;
  const bool follow = follows(e);
  // Without --owners a chown is still issued, as chown(-1, -1): the same look-up and
  // permission check, no change of owner.
  const bool owners = s_.privilege.owners;
  const uint32_t uid = owners ? static_cast<uint32_t>(e.aux >> 32) : UINT32_MAX;
  const uint32_t gid = owners ? static_cast<uint32_t>(e.aux) : UINT32_MAX;
  const uint32_t mode = mode_of(e);
  switch (e.kind) {
    case op::fchmod:
      return fd_of(w.fx.h1) < 0 ? -EBADF : sys(::fchmod(fd_of(w.fx.h1), mode));
    case op::fchown:
      return fd_of(w.fx.h1) < 0 ? -EBADF : sys(::fchown(fd_of(w.fx.h1), uid, gid));
    case op::chmod:
    case op::fchmodat:
    case op::fchmodat2: {
      int64_t r = -EOPNOTSUPP;
      const int d = dir_fd(w.p1);
      if (d >= 0)
        r = sys(::syscall(nr::fchmodat2, d, w.p1->name(), mode, AT_SYMLINK_NOFOLLOW));
      else if (d != -EBUSY)
        return d;
      if (r != -EOPNOTSUPP && r != -ENOSYS) return r;
      if (r == -EOPNOTSUPP && !follow && d >= 0) return r;  // a symlink's own mode
      owned_fd f{open_path(w.p1, O_PATH | (follow ? 0 : O_NOFOLLOW))};
      if (f.fd < 0) return f.fd;
      r = sys(::syscall(nr::fchmodat2, f.fd, "", mode, AT_EMPTY_PATH));
      if (r == -ENOSYS) r = sys(::chmod(proc_fd(f.fd).c_str(), mode));
      return r;
    }
    case op::chown:
    case op::lchown:
    case op::fchownat: {
      if (on_fd(e)) return fd_of(w.fx.h1) < 0 ? -EBADF : sys(::fchown(fd_of(w.fx.h1), uid, gid));
      if (!follow) {
        const int d = dir_fd(w.p1);
        if (d >= 0) return sys(::fchownat(d, w.p1->name(), uid, gid, AT_SYMLINK_NOFOLLOW));
        if (d != -EBUSY) return d;
      }
      owned_fd f{open_path(w.p1, O_PATH | (follow ? 0 : O_NOFOLLOW))};
      if (f.fd < 0) return f.fd;
      return sys(::fchownat(f.fd, "", uid, gid, AT_EMPTY_PATH));
    }
    case op::utime:
    case op::utimes:
    case op::futimesat:
    case op::utimensat: {
      const timespec ts[2] = {to_timespec(e.offset), to_timespec(e.offset2)};
      if (on_fd(e) || !w.p1) {
        const int fd = fd_of(w.fx.h1);
        return fd < 0 ? -EBADF : sys(::futimens(fd, ts));
      }
      if (!follow) {
        const int d = dir_fd(w.p1);
        if (d >= 0) return sys(::utimensat(d, w.p1->name(), ts, AT_SYMLINK_NOFOLLOW));
        if (d != -EBUSY) return d;
      }
      owned_fd f{open_path(w.p1, O_PATH | (follow ? 0 : O_NOFOLLOW))};
      if (f.fd < 0) return f.fd;
      return sys(::utimensat(f.fd, "", ts, AT_EMPTY_PATH));
    }
    case op::file_setattr:
      return file_attr_op(w);
    default:
      return not_issued;
  }
}

// file_getattr; file_setattr sets the recorded fa_xflags over the target's other attributes
// (extent size hints, project id), which the trace does not hold.
int64_t op_runner::file_attr_op(const work_item& w) {
  const event& e = w.ev;
  const bool set = e.kind == op::file_setattr;
  // Room for any usize the kernel reads (it refuses more than a page), zeros past the struct.
  alignas(8) uint8_t attr[4096] = {};
  auto call = [&](int d, const char* name, unsigned at_flags) -> int64_t {
    if (e.size > sizeof attr) return -E2BIG;  // what the kernel says; never past the buffer
    const int64_t r = sys(::syscall(nr::file_getattr, d, name, attr, e.size, at_flags));
    if (!set || r < 0) return r;
    std::memcpy(attr, &e.aux, sizeof e.aux);  // fa_xflags
    return sys(::syscall(nr::file_setattr, d, name, attr, e.size, at_flags));
  };
  if (on_fd(e)) {  // the recorded at_flags: an empty name acts on the fd or on nothing
    const int fd = fd_of(w.fx.h1);
    return fd < 0 ? -EBADF : call(fd, "", e.flags);
  }
  const bool follow = follows(e);
  if (!follow) {
    const int d = dir_fd(w.p1);
    if (d >= 0) return call(d, w.p1->name(), AT_SYMLINK_NOFOLLOW);
    if (d != -EBUSY) return d;
  }
  // Refused on the O_PATH fd itself (EBADF), as the xattr calls are: named through /proc.
  owned_fd f{open_path(w.p1, O_PATH | (follow ? 0 : O_NOFOLLOW))};
  if (f.fd < 0) return f.fd;
  return call(AT_FDCWD, proc_fd(f.fd).c_str(), 0);
}

int64_t op_runner::xattr_op(const work_item& w) {
  const event& e = w.ev;
  const bool by_fd = !has(e.kind, F_PATH) || on_fd(e);  // the f* calls, and AT_EMPTY_PATH
  const char* xname = w.text ? w.text->c_str() : "";
  const bool set = e.kind == op::setxattr || e.kind == op::lsetxattr || e.kind == op::fsetxattr ||
                   e.kind == op::setxattrat;
  const bool get = e.kind == op::getxattr || e.kind == op::lgetxattr || e.kind == op::fgetxattr ||
                   e.kind == op::getxattrat;
  const bool list = e.kind == op::listxattr || e.kind == op::llistxattr ||
                    e.kind == op::flistxattr || e.kind == op::listxattrat;
  if (set) {  // a valid value where the kernel parses it (ACLs), as prepare
    const uint32_t size = static_cast<uint32_t>(std::min<uint64_t>(e.size, XATTR_SIZE_MAX));
    // An ACL's value depends only on its size and permission bits: one serves every file.
    const bool acl = std::string_view(xname).starts_with("system.posix_acl_");
    const uint32_t mode = acl && (e.mode & acl_mode_present) ? e.mode : 0;
    const handle_id h = w.fx.h1;
    const uint64_t key = acl ? 0 : by_fd && h ? s_.handles[h].key : content_key(e.path);
    if (!xattr_.valid || xattr_.name != w.text || xattr_.size != size || xattr_.key != key ||
        xattr_.mode != mode) {
      xattr_.value = xattr_value(xname, size, s_.data, key);
      if (mode) give_acl_mode(xattr_.value, mode);
      xattr_.valid = true;
      xattr_.name = w.text;
      xattr_.size = size;
      xattr_.key = key;
      xattr_.mode = mode;
    }
  }
  const std::vector<uint8_t>& value = xattr_.value;
  const size_t n = std::min<uint64_t>(e.size, s_.sink.size());
  char* sink = reinterpret_cast<char*>(s_.sink.data());
  const bool at = xattrat_op(e.kind);
  const uint32_t xattr_bits = XATTR_CREATE | XATTR_REPLACE;
  const int xflags = static_cast<int>(at ? e.flags & xattr_bits : e.flags);
  // The *xattrat calls on a directory fd and a name; -ENOSYS on kernels before 6.13.
  auto xattrat = [&](int d, const char* name, unsigned at_flags) -> int64_t {
    if (!have_xattrat.load(std::memory_order_relaxed)) return -ENOSYS;
    int64_t r;
    if (set) {
      nr::xattr_args a{reinterpret_cast<uint64_t>(value.data()), static_cast<uint32_t>(value.size()),
                   static_cast<uint32_t>(xflags)};
      r = sys(::syscall(nr::setxattrat, d, name, at_flags, xname, &a, sizeof a));
    } else if (get) {
      nr::xattr_args a{reinterpret_cast<uint64_t>(sink), static_cast<uint32_t>(n),
                   static_cast<uint32_t>(xflags)};
      r = sys(::syscall(nr::getxattrat, d, name, at_flags, xname, &a, sizeof a));
    } else if (list) {
      r = sys(::syscall(nr::listxattrat, d, name, at_flags, sink, n));
    } else {
      r = sys(::syscall(nr::removexattrat, d, name, at_flags, xname));
    }
    if (r == -ENOSYS) have_xattrat.store(false, std::memory_order_relaxed);
    return r;
  };
  if (by_fd) {
    const int fd = fd_of(w.fx.h1);
    if (fd < 0) return -EBADF;
    if (at) {  // as recorded, at_flags included: an empty name acts on the fd or on nothing
      const int64_t r = xattrat(fd, "", e.flags & ~xattr_bits);
      if (r != -ENOSYS) return r;
    }
    if (set) return sys(::fsetxattr(fd, xname, value.data(), value.size(), xflags));
    if (get) return sys(::fgetxattr(fd, xname, sink, n));
    if (list) return sys(::flistxattr(fd, sink, n));
    return sys(::fremovexattr(fd, xname));
  }
  // Following a final symlink or not makes no difference for what was recorded as something
  // else, and not following takes no detour through an O_PATH fd.
  const bool follow = follows(e) && !no_symlink(w);
  const bool named = w.p1 && w.p1->ok && !w.p1->is_root() && plain_name(w.p1->name());
  // Not following a final symlink, in a thread with a working directory of its own: the
  // l*xattr calls on the name, from the confined parent directory. One component that is not
  // followed cannot lead elsewhere, and these are the calls a recorder knows.
  if (!follow && named && own_cwd_) {
    if (const int r = enter_dir(w.p1); r < 0) return r;
    const char* name = w.p1->name();
    if (set) return sys(::lsetxattr(name, xname, value.data(), value.size(), xflags));
    if (get) return sys(::lgetxattr(name, xname, sink, n));
    if (list) return sys(::llistxattr(name, sink, n));
    return sys(::lremovexattr(name, xname));
  }
  // Otherwise the *xattrat calls on the confined parent and the name.
  if (!follow && named && have_xattrat.load(std::memory_order_relaxed)) {
    const int d = dir_fd(w.p1);
    if (d < 0) return d;
    if (const int64_t r = xattrat(d, w.p1->name(), AT_SYMLINK_NOFOLLOW); r != -ENOSYS) return r;
  }
  // Otherwise the object opened confined and named through /proc, where the magic link lands
  // on the object itself: the xattr calls refuse the O_PATH fd as such (EBADF), the
  // AT_EMPTY_PATH forms of the *xattrat calls included.
  owned_fd f{open_path(w.p1, O_PATH | (follow ? 0 : O_NOFOLLOW))};
  if (f.fd < 0) return f.fd;
  const std::string p = proc_fd(f.fd);
  if (set) return sys(::setxattr(p.c_str(), xname, value.data(), value.size(), xflags));
  if (get) return sys(::getxattr(p.c_str(), xname, sink, n));
  if (list) return sys(::listxattr(p.c_str(), sink, n));
  return sys(::removexattr(p.c_str(), xname));
}

}  // namespace fsrr
