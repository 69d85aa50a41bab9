#include "syscall_table.h"

#include <asm/unistd_64.h>
#include <sys/un.h>

#include <initializer_list>

#include "syscall_nr.h"

namespace fsrr::recorder {
namespace {

// Builds a capture descriptor; argument indexes are 0-based here, stored 1-based.
struct cap {
  fsrr_sc d{};
  constexpr cap() { d.record = 1; }
  constexpr cap& kind(fsrr_kind k) {
    d.kind = static_cast<uint8_t>(k);
    return *this;
  }
  // An fd argument, as it stands at exit; close's at entry (at exit its file is gone).
  constexpr cap& fd(int arg) { return fd_slot(0, arg); }
  constexpr cap& fd2(int arg) { return fd_slot(1, arg); }
  constexpr cap& fd_at_entry(int arg) {
    d.flags |= FSRR_SC_FD0_ENTER;
    return fd_slot(0, arg);
  }
  // A path argument, relative to the dirfd argument (or the cwd when there is none).
  constexpr cap& path(int arg, int dirfd_arg = -1) { return path_slot(0, arg, dirfd_arg); }
  constexpr cap& path2(int arg, int dirfd_arg = -1) { return path_slot(1, arg, dirfd_arg); }
  constexpr cap& str(int arg) {
    d.str = static_cast<uint8_t>(arg + 1);
    return *this;
  }
  // A user struct copied at exit: always, or only when the call succeeded.
  constexpr cap& user(int arg, uint16_t len, bool only_on_success) {
    d.user = static_cast<uint8_t>(arg + 1);
    d.user_len = len;
    if (only_on_success) d.flags |= FSRR_SC_USER_OK;
    return *this;
  }
  // A stat buffer: what a name led to, wanted for the initial tree (through an fd, the
  // recorder knows the file already).
  constexpr cap& stat_buffer(int arg, uint16_t len) {
    d.flags |= FSRR_SC_USER_PATH;
    return user(arg, len, true);
  }
  // readlink's buffer as the call filled it (the first FSRR_USER_MAX bytes): the target of a
  // link the workload may remove before the recorder can look at it.
  constexpr cap& link_target(int arg) {
    d.flags |= FSRR_SC_USER_RET;
    return user(arg, FSRR_USER_MAX, false);
  }
  // A loff_t * argument holding the offset for fd (slot 0) or fd2 (slot 1), read at exit.
  constexpr cap& loff(int slot, int arg) {
    d.loff[slot] = static_cast<uint8_t>(arg + 1);
    return *this;
  }

 private:
  constexpr cap& fd_slot(int slot, int arg) {
    d.fd[slot] = static_cast<uint8_t>(arg + 1);
    return *this;
  }
  constexpr cap& path_slot(int slot, int arg, int dirfd_arg) {
    d.path[slot] = static_cast<uint8_t>(arg + 1);
    d.dirfd[slot] = static_cast<uint8_t>(dirfd_arg + 1);
    return *this;
  }
};

constexpr uint16_t stat_len = 120;       // struct stat, up to st_ctim
constexpr uint16_t statx_len = 144;      // struct statx, up to stx_dev_minor
constexpr uint16_t xattr_args_len = sizeof(nr::xattr_args);
constexpr uint16_t file_attr_len = 24;   // struct file_attr, version 0

struct row {
  int nr;
  op kind;
  cap capture;
};

const std::initializer_list<row> rows = {
    // opens and close
    {__NR_open, op::open, cap().path(0).kind(FSRR_K_OPEN)},
    {__NR_openat, op::openat, cap().path(1, 0).kind(FSRR_K_OPEN)},
    {__NR_openat2, op::openat2, cap().path(1, 0).user(2, 24, false).kind(FSRR_K_OPEN)},
    {__NR_creat, op::creat, cap().path(0).kind(FSRR_K_OPEN)},
    {__NR_close, op::close, cap().fd_at_entry(0).kind(FSRR_K_CLOSE)},
    {__NR_close_range, op::close_range, cap().kind(FSRR_K_CLOSE)},
    // data
    {__NR_read, op::read, cap().fd(0)},
    {__NR_pread64, op::pread64, cap().fd(0)},
    {__NR_readv, op::readv, cap().fd(0).kind(FSRR_K_IOV)},
    {__NR_preadv, op::preadv, cap().fd(0).kind(FSRR_K_IOV)},
    {__NR_preadv2, op::preadv2, cap().fd(0).kind(FSRR_K_IOV)},
    {__NR_write, op::write, cap().fd(0)},
    {__NR_pwrite64, op::pwrite64, cap().fd(0)},
    {__NR_writev, op::writev, cap().fd(0).kind(FSRR_K_IOV)},
    {__NR_pwritev, op::pwritev, cap().fd(0).kind(FSRR_K_IOV)},
    {__NR_pwritev2, op::pwritev2, cap().fd(0).kind(FSRR_K_IOV)},
    {__NR_lseek, op::lseek, cap().fd(0)},
    {__NR_copy_file_range, op::copy_file_range, cap().fd(0).fd2(2).loff(0, 1).loff(1, 3)},
    {__NR_sendfile, op::sendfile, cap().fd(0).fd2(1).loff(1, 2)},
    {__NR_splice, op::splice, cap().fd(0).fd2(2).loff(0, 1).loff(1, 3)},
    {__NR_ioctl, op::ioctl, cap().fd(0).kind(FSRR_K_IOCTL)},
    {__NR_fadvise64, op::fadvise64, cap().fd(0)},
    {__NR_readahead, op::readahead, cap().fd(0)},
    {__NR_getdents, op::getdents, cap().fd(0)},
    {__NR_getdents64, op::getdents64, cap().fd(0)},
    // durability and size
    {__NR_fsync, op::fsync, cap().fd(0)},
    {__NR_fdatasync, op::fdatasync, cap().fd(0)},
    {__NR_sync_file_range, op::sync_file_range, cap().fd(0)},
    {__NR_syncfs, op::syncfs, cap().fd(0)},
    {__NR_sync, op::sync, cap()},
    {__NR_ftruncate, op::ftruncate, cap().fd(0)},
    {__NR_truncate, op::truncate, cap().path(0)},
    {__NR_fallocate, op::fallocate, cap().fd(0)},
    // namespace
    {__NR_mkdir, op::mkdir, cap().path(0)},
    {__NR_mkdirat, op::mkdirat, cap().path(1, 0)},
    {__NR_mknod, op::mknod, cap().path(0)},
    {__NR_mknodat, op::mknodat, cap().path(1, 0)},
    // its sockaddr: a Unix socket bound to a name makes a file there
    {__NR_bind, op::bind, cap().user(1, sizeof(sockaddr_un), true)},
    {__NR_rmdir, op::rmdir, cap().path(0)},
    {__NR_unlink, op::unlink, cap().path(0)},
    {__NR_unlinkat, op::unlinkat, cap().path(1, 0)},
    {__NR_rename, op::rename, cap().path(0).path2(1)},
    {__NR_renameat, op::renameat, cap().path(1, 0).path2(3, 2)},
    {__NR_renameat2, op::renameat2, cap().path(1, 0).path2(3, 2)},
    {__NR_link, op::link, cap().path(0).path2(1)},
    {__NR_linkat, op::linkat, cap().path(1, 0).path2(3, 2)},
    {__NR_symlink, op::symlink, cap().str(0).path(1)},
    {__NR_symlinkat, op::symlinkat, cap().str(0).path(2, 1)},
    // metadata
    {__NR_stat, op::stat, cap().path(0).stat_buffer(1, stat_len)},
    {__NR_lstat, op::lstat, cap().path(0).stat_buffer(1, stat_len)},
    {__NR_fstat, op::fstat, cap().fd(0)},
    {__NR_newfstatat, op::newfstatat, cap().path(1, 0).stat_buffer(2, stat_len)},
    {__NR_statx, op::statx, cap().path(1, 0).stat_buffer(4, statx_len)},
    {__NR_statfs, op::statfs, cap().path(0)},
    {__NR_fstatfs, op::fstatfs, cap().fd(0)},
    {__NR_access, op::access, cap().path(0)},
    {__NR_faccessat, op::faccessat, cap().path(1, 0)},
    {__NR_faccessat2, op::faccessat2, cap().path(1, 0)},
    {__NR_readlink, op::readlink, cap().path(0).link_target(1)},
    {__NR_readlinkat, op::readlinkat, cap().path(1, 0).link_target(2)},
    {__NR_chmod, op::chmod, cap().path(0)},
    {__NR_fchmod, op::fchmod, cap().fd(0)},
    {__NR_fchmodat, op::fchmodat, cap().path(1, 0)},
    {nr::fchmodat2, op::fchmodat2, cap().path(1, 0)},
    {__NR_chown, op::chown, cap().path(0)},
    {__NR_lchown, op::lchown, cap().path(0)},
    {__NR_fchown, op::fchown, cap().fd(0)},
    {__NR_fchownat, op::fchownat, cap().path(1, 0)},
    {__NR_utime, op::utime, cap().path(0).user(1, 16, false)},
    {__NR_utimes, op::utimes, cap().path(0).user(1, 32, false)},
    {__NR_futimesat, op::futimesat, cap().path(1, 0).user(2, 32, false)},
    {__NR_utimensat, op::utimensat, cap().path(1, 0).user(2, 32, false)},
    {nr::file_getattr, op::file_getattr, cap().path(1, 0)},
    {nr::file_setattr, op::file_setattr, cap().path(1, 0).user(2, file_attr_len, false)},
    // xattrs
    {__NR_setxattr, op::setxattr, cap().path(0).str(1).kind(FSRR_K_SETXATTR)},
    {__NR_lsetxattr, op::lsetxattr, cap().path(0).str(1).kind(FSRR_K_SETXATTR)},
    {__NR_fsetxattr, op::fsetxattr, cap().fd(0).str(1).kind(FSRR_K_SETXATTR)},
    {__NR_getxattr, op::getxattr, cap().path(0).str(1)},
    {__NR_lgetxattr, op::lgetxattr, cap().path(0).str(1)},
    {__NR_fgetxattr, op::fgetxattr, cap().fd(0).str(1)},
    {__NR_listxattr, op::listxattr, cap().path(0)},
    {__NR_llistxattr, op::llistxattr, cap().path(0)},
    {__NR_flistxattr, op::flistxattr, cap().fd(0)},
    {__NR_removexattr, op::removexattr, cap().path(0).str(1)},
    {__NR_lremovexattr, op::lremovexattr, cap().path(0).str(1)},
    {__NR_fremovexattr, op::fremovexattr, cap().fd(0).str(1)},
    {nr::setxattrat, op::setxattrat,
     cap().path(1, 0).str(3).user(4, xattr_args_len, false).kind(FSRR_K_SETXATTRAT)},
    {nr::getxattrat, op::getxattrat, cap().path(1, 0).str(3).user(4, xattr_args_len, false)},
    {nr::listxattrat, op::listxattrat, cap().path(1, 0)},
    {nr::removexattrat, op::removexattrat, cap().path(1, 0).str(3)},
    // fd table
    {__NR_dup, op::dup, cap().fd(0).kind(FSRR_K_DUP)},
    {__NR_dup2, op::dup2, cap().fd(0).kind(FSRR_K_DUP)},
    {__NR_dup3, op::dup3, cap().fd(0).kind(FSRR_K_DUP)},
    {__NR_fcntl, op::fcntl, cap().fd(0).kind(FSRR_K_FCNTL)},
    {__NR_flock, op::flock, cap().fd(0)},
    {__NR_chdir, op::chdir, cap().path(0).kind(FSRR_K_CHDIR)},
    {__NR_fchdir, op::fchdir, cap().fd(0).kind(FSRR_K_CHDIR)},
    // process tree
    {__NR_clone, op::clone, cap()},
    {__NR_clone3, op::clone3, cap().user(0, 8, false)},  // clone_args.flags
    {__NR_fork, op::fork, cap()},
    {__NR_vfork, op::vfork, cap()},
    {__NR_execve, op::execve, cap().path(0).kind(FSRR_K_EXEC)},
    {__NR_execveat, op::execveat, cap().path(1, 0).kind(FSRR_K_EXEC)},
    // invisible to syscall tracing
    {__NR_mmap, op::mmap, cap().fd(4).kind(FSRR_K_MMAP)},
    {__NR_msync, op::msync, cap().kind(FSRR_K_MSYNC)},
    // kept in the programs' table of shared mappings, never sent (the op is never written)
    {__NR_munmap, op::mmap, cap().kind(FSRR_K_MUNMAP)},
    {__NR_mremap, op::mmap, cap().kind(FSRR_K_MUNMAP)},
    {__NR_mprotect, op::mmap, cap().kind(FSRR_K_MUNMAP)},  // made writable: followed from then
    {__NR_pkey_mprotect, op::mmap, cap().kind(FSRR_K_MUNMAP)},
    {__NR_io_setup, op::io_setup, cap()},
    {__NR_io_submit, op::io_submit, cap().kind(FSRR_K_AIO_SUBMIT)},
    {__NR_io_getevents, op::io_getevents, cap().kind(FSRR_K_AIO_EVENTS)},
    {__NR_io_pgetevents, op::io_getevents, cap().kind(FSRR_K_AIO_EVENTS)},
    {__NR_io_uring_setup, op::io_uring_setup, cap()},
    {__NR_io_uring_enter, op::io_uring_enter, cap().fd(0)},
};

syscall_table build() {
  syscall_table t{};
  for (const auto& r : rows) t[static_cast<size_t>(r.nr)] = syscall_entry{r.kind, r.capture.d};
  return t;
}

}  // namespace

const syscall_table& syscalls() {
  static const syscall_table table = build();
  return table;
}

}  // namespace fsrr::recorder
