// The other syscalls: stat, access and readlink; chmod, chown and the utimes family; xattrs
// and file_*attr; lseek, ioctl, getdents, truncate and fallocate, flock and the hints.
#include "syscall_ctx.h"

namespace fsrr::recorder {

// Everything else: one fd, or one path (which may stand for an fd: AT_EMPTY_PATH), plus
// op-specific fields.
// The fields of the xattr and file attribute calls.
void decoder::xattr_fields(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  auto name = [&] { return c.it.str[2] ? name_id(*c.it.str[2]) : no_id; };
  switch (e.kind) {
    case op::setxattr:
    case op::lsetxattr:
    case op::fsetxattr:
      e.aux = name(), e.size = a[3], e.flags = static_cast<uint32_t>(a[4]);
      if (const auto& acl = c.it.u64[1]) e.mode = acl_mode_present | static_cast<uint32_t>(*acl);
      break;
    case op::getxattr:
    case op::lgetxattr:
    case op::fgetxattr:
      e.aux = name(), e.size = a[3];
      break;
    case op::listxattr:
    case op::llistxattr:
    case op::flistxattr:
      e.size = a[2];
      break;
    case op::removexattr:
    case op::lremovexattr:
    case op::fremovexattr:
      e.aux = name();
      break;
    case op::setxattrat:
    case op::getxattrat: {
      e.aux = name(), e.flags = static_cast<uint32_t>(a[2]);
      nr::xattr_args x;
      if (user_as(c.it.user, x)) e.size = x.size, e.flags |= x.flags;
      if (const auto& acl = c.it.u64[1]) e.mode = acl_mode_present | static_cast<uint32_t>(*acl);
      break;
    }
    case op::listxattrat:
      e.flags = static_cast<uint32_t>(a[2]), e.size = a[4];
      break;
    case op::removexattrat:
      e.aux = name(), e.flags = static_cast<uint32_t>(a[2]);
      break;
    case op::file_getattr:
    case op::file_setattr: {
      e.size = a[3], e.flags = static_cast<uint32_t>(a[4]);
      uint64_t xflags;  // the first field of struct file_attr
      if (e.kind == op::file_setattr && user_as(c.it.user, xflags)) e.aux = xflags;
      break;
    }
    default:
      break;
  }
}

// What the call tells of the initial tree: an xattr absent, a path that existed, a link's
// target, a directory where readlink found no link.
void decoder::found_by_other(syscall_ctx& c, bool path_op) {
  event& e = c.e;
  const bool ok = e.result >= 0;
  const bool xattr_name_op =
      info(e.kind).cls == op_class::xattr && e.aux != no_id && e.aux != 0 &&
      e.kind != op::listxattr && e.kind != op::llistxattr && e.kind != op::flistxattr &&
      e.kind != op::listxattrat;
  if (xattr_name_op) {
    const op k = e.kind;
    const bool set = k == op::setxattr || k == op::lsetxattr || k == op::fsetxattr ||
                     k == op::setxattrat;
    if ((set && ok) || (!set && e.result == -ENODATA))
      tree_.xattr_absent(e.path != no_id ? e.path : c.fd_path, static_cast<string_id>(e.aux));
  }
  if (path_op) {
    if (const held_file h = held(e.path); h.id != no_id) e.file = h.id;
    if (ok) tree_.existed(e.path);
    if (ok && (e.kind == op::readlink || e.kind == op::readlinkat) &&
        c.it.user.size() == static_cast<size_t>(e.result))  // else cut at FSRR_USER_MAX
      tree_.link_read(e.path, {reinterpret_cast<const char*>(c.it.user.data()), c.it.user.size()});
    // readlink's EINVAL: something that is not a symlink is there, most often a directory of
    // a realpath walk: looked at a second later, when its children are known.
    if (e.result == -EINVAL && (e.kind == op::readlink || e.kind == op::readlinkat))
      tree_.probably_dir(e.path, e.ts);
  }
}

// The arguments of an op decode_other takes (but the stats, which it does itself) that
// the event keeps: offsets, sizes, modes, owners, times, flags, attribute names.
void decoder::other_args(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  auto owner = [&](int i) { return a[i] << 32 | static_cast<uint32_t>(a[i + 1]); };
  switch (e.kind) {
    case op::lseek:
      e.offset = static_cast<int64_t>(a[1]), e.aux = a[2];
      break;
    case op::ioctl:
      e.aux = static_cast<uint32_t>(a[1]);
      if (e.aux == ficlone || e.aux == ficlonerange) {
        e.fd2 = static_cast<int32_t>(a[2]);
        int64_t range[4];
        if (e.aux == ficlonerange && user_as(c.it.user, range)) {
          e.fd2 = static_cast<int32_t>(range[0]);
          e.offset = range[1];
          e.size = static_cast<uint64_t>(range[2]);
          e.offset2 = range[3];
        }
        if (const fd_ref src = fd_of(c.t.files, e.fd2, c.it.ref[1]); !src.nonfile)
          e.file2 = src.file;
      }
      break;
    case op::fadvise64:
    case op::sync_file_range:
      e.offset = static_cast<int64_t>(a[1]), e.size = a[2], e.flags = static_cast<uint32_t>(a[3]);
      break;
    case op::readahead:
      e.offset = static_cast<int64_t>(a[1]), e.size = a[2];
      break;
    case op::getdents:
    case op::getdents64:
      e.size = a[2];
      if (e.result > 0) tree_.listed(c.fd_path, e.ts);
      break;
    case op::ftruncate:
    case op::truncate:
      e.size = a[1];
      break;
    case op::fallocate:
      e.flags = static_cast<uint32_t>(a[1]), e.offset = static_cast<int64_t>(a[2]), e.size = a[3];
      break;
    case op::flock:
      e.flags = static_cast<uint32_t>(a[1]);
      break;
    case op::access:
    case op::chmod:
    case op::fchmod:
      e.mode = static_cast<uint32_t>(a[1]);
      break;
    case op::faccessat:
    case op::faccessat2:
    case op::fchmodat:
    case op::fchmodat2:
      e.mode = static_cast<uint32_t>(a[2]);
      if (e.kind == op::faccessat2 || e.kind == op::fchmodat2)
        e.flags = static_cast<uint32_t>(a[3]);
      break;
    case op::readlink:
      e.size = a[2];
      break;
    case op::readlinkat:
      e.size = a[3];
      break;
    case op::chown:
    case op::lchown:
    case op::fchown:
      e.aux = owner(1);
      break;
    case op::fchownat:
      e.aux = owner(2), e.flags = static_cast<uint32_t>(a[4]);
      break;
    case op::utime:
    case op::utimes:
    case op::futimesat:
    case op::utimensat:
      decode_times(e.kind, c.it.user, e);
      if (e.kind == op::utimensat) e.flags = static_cast<uint32_t>(a[3]);
      break;
    case op::setxattr:
    case op::lsetxattr:
    case op::fsetxattr:
    case op::getxattr:
    case op::lgetxattr:
    case op::fgetxattr:
    case op::listxattr:
    case op::llistxattr:
    case op::flistxattr:
    case op::removexattr:
    case op::lremovexattr:
    case op::fremovexattr:
    case op::setxattrat:
    case op::getxattrat:
    case op::listxattrat:
    case op::removexattrat:
    case op::file_getattr:
    case op::file_setattr:
      xattr_fields(c);
      break;
    default:
      break;
  }
}

void decoder::decode_other(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const bool by_fd = c.cap.fd[0] != 0;
  const bool fd_for_path = !by_fd && c.it.ref[0];
  if (by_fd || fd_for_path) {
    const int64_t fd = static_cast<int64_t>(a[by_fd ? c.cap.fd[0] - 1 : c.cap.dirfd[0] - 1]);
    if (!fd_op(c, 0, fd)) return;
    if (fd_for_path) e.path = c.fd_path;
  } else {
    e.path = path_arg(c, 0);
    if (off_storage(e.path)) return w_.add_nonfile(e.kind, fd_kind::other);
  }
  const bool path_op = !by_fd && !fd_for_path;
  const bool ok = e.result >= 0;
  switch (e.kind) {
    case op::stat:
    case op::lstat:
      if (ok && !stat_result(c, e.path, e.kind == op::stat))
        return w_.add_nonfile(e.kind, fd_kind::other);
      return emit(c);
    case op::newfstatat:
    case op::statx: {
      const bool sx = e.kind == op::statx;
      e.flags = static_cast<uint32_t>(a[sx ? 2 : 3]);
      if (sx) e.aux = static_cast<uint32_t>(a[3]);
      if (ok && path_op && !stat_result(c, e.path, !(e.flags & AT_SYMLINK_NOFOLLOW)))
        return w_.add_nonfile(e.kind, fd_kind::other);
      if (path_op) return emit(c);
      break;
    }
    default:
      other_args(c);
  }
  found_by_other(c, path_op);
  emit(c);
}

}  // namespace fsrr::recorder
