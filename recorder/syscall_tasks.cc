// Syscalls on fd tables and processes: close, dup, fcntl, close_range, fork, exec, exit,
// chdir, and the ones syscall tracing cannot follow (mmap, AIO, io_uring).
#include "syscall_ctx.h"

namespace fsrr::recorder {

void decoder::decode_fd_table(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const uint64_t files = c.t.files;
  if (e.kind == op::close_range) {
    e.fd = static_cast<int32_t>(a[0]);
    e.fd2 = static_cast<int32_t>(a[1]);
    e.flags = static_cast<uint32_t>(a[2]);
    if (e.result == 0) {
      if (e.flags & close_range_cloexec)
        fds_.cloexec_range(files, static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1]));
      else
        fds_.unbind_range(files, static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1]));
    }
    return emit(c);
  }
  const int fd = static_cast<int>(a[0]);
  if (e.kind == op::close) {
    const bool file = fd_op(c, 0, fd);
    if (e.result != -EBADF) {
      const fsrr_fdref* closed = c.it.ref[0];
      if (closed && closed->file)
        fds_.unbind(files, fd, closed->file);  // which binding: another may have the number now
      else
        fds_.unbind(files, fd);
    }
    if (file) emit(c);
    return;
  }
  const bool file = fd_op(c, 0, fd);
  bool dup = false, cloexec = false;
  switch (e.kind) {
    case op::dup:
      dup = true;
      break;
    case op::dup2:
      e.fd2 = static_cast<int32_t>(a[1]);
      dup = a[0] != a[1];
      break;
    case op::dup3:
      e.fd2 = static_cast<int32_t>(a[1]);
      e.flags = static_cast<uint32_t>(a[2]);
      dup = true;
      cloexec = e.flags & O_CLOEXEC;
      break;
    default:  // fcntl
      e.aux = static_cast<uint32_t>(a[1]);
      e.flags = static_cast<uint32_t>(a[2]);
      dup = e.aux == F_DUPFD || e.aux == F_DUPFD_CLOEXEC;
      cloexec = e.aux == F_DUPFD_CLOEXEC;
      if (e.aux == F_SETFD && e.result == 0) fds_.set_cloexec(files, fd, e.flags & FD_CLOEXEC);
  }
  if (dup && e.result >= 0) {
    const fsrr_fdref* made = c.it.ref[2];
    const fd_entry* from = fds_.find(files, fd);
    if (from && made && made->file == from->kfile) {  // the new fd shares the old one's file
      fd_entry copy = *from;
      copy.cloexec = cloexec;
      fds_.unbind(files, static_cast<int>(e.result));  // dup2 closed what was there, at once
      fds_.bind(files, static_cast<int>(e.result), copy);
    } else {
      fds_.unbind(files, static_cast<int>(e.result));  // dup2 over a known fd
    }
  }
  if (file) emit(c);
}

void decoder::decode_process(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const auto tid = static_cast<int32_t>(c.h.h.tid);
  switch (e.kind) {
    case op::chdir:
      // A chdir that worked is decoded after the new cwd it sent: that is its path (a
      // relative name would now be taken from the new cwd, "repo" as "repo/repo").
      e.path = e.result == 0 ? fds_.cwd(c.t.fs) : no_id;
      if (e.path == no_id) e.path = path_arg(c, 0);
      if (off_storage(e.path)) return w_.add_nonfile(e.kind, fd_kind::other);
      if (e.result == 0) tree_.existed(e.path);
      break;
    case op::fchdir:
      if (!fd_op(c, 0, static_cast<int64_t>(a[0]))) return;
      break;
    case op::execve:
    case op::execveat:
      if (e.result == 0) {
        if (auto it = exec_path_.find(tid); it != exec_path_.end()) {
          e.path = it->second;
          exec_path_.erase(it);
        }
        e.aux = fds_.id_of(c.t.files);
      } else {
        e.path = path_arg(c, 0);
      }
      break;
    default: {  // clone, clone3, fork, vfork
      if (e.kind == op::clone) e.flags = static_cast<uint32_t>(a[0]);
      uint64_t flags = 0;
      if (e.kind == op::clone3 && user_as(c.it.user, flags)) e.flags = static_cast<uint32_t>(flags);
      if (e.result > 0) {
        if (auto it = child_files_.find({tid, static_cast<int32_t>(e.result)});
            it != child_files_.end()) {
          e.aux = fds_.id_of(it->second);
          child_files_.erase(it);
        }
      }
    }
  }
  emit(c);
}

// I/O that syscall tracing cannot see: recorded, and the trace says it is incomplete.
void decoder::decode_invisible(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  switch (e.kind) {
    case op::mmap: {
      if ((a[3] & MAP_ANONYMOUS) || static_cast<int>(a[4]) < 0)
        return w_.add_nonfile(e.kind, fd_kind::other);
      if (!fd_op(c, 0, static_cast<int>(a[4]))) return;
      e.offset = static_cast<int64_t>(a[5]);
      e.size = a[1];
      e.flags = static_cast<uint32_t>(a[3]);
      e.mode = static_cast<uint32_t>(a[2]);
      const uint32_t type = e.flags & 0x0f;  // MAP_TYPE
      const fsrr_fdref* f = c.it.ref[0];
      // Stores through it are invisible to syscalls; the write faults show them, if followed.
      if (e.result >= 0 && (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) &&
          (e.mode & PROT_WRITE) && f && (f->f_flags & O_ACCMODE) != O_RDONLY && !mapped_writes_)
        w_.mark_incomplete(incomplete_shared_mmap);
      break;
    }
    case op::msync: {
      e.size = a[1];
      e.flags = static_cast<uint32_t>(a[2]);
      // MS_SYNC on a file whose mapped writes the trace has: an fdatasync of it (the kernel
      // syncs the range's data); MS_ASYNC does nothing since Linux 2.6.19.
      const fsrr_fdref* mapped = c.it.ref[0];
      const auto fd = mapped ? mapped_fds_.find({c.t.files, mapped->file}) : mapped_fds_.end();
      if (!(e.flags & MS_SYNC) || fd == mapped_fds_.end()) break;
      const fd_entry* f = fds_.find(c.t.files, fd->second, mapped->file);
      if (!f) break;
      e.kind = op::fdatasync;
      e.fd = fd->second;
      e.file = f->file;
      e.size = 0;
      e.flags = 0;
      break;
    }
    case op::io_setup:
      e.aux = a[0];
      break;
    case op::io_submit:
      return decode_aio_submit(c);
    case op::io_getevents:
      return decode_aio_events(c);
    default:  // io_uring_setup, io_uring_enter
      if (e.kind == op::io_uring_enter) e.fd = static_cast<int32_t>(a[0]);
      e.aux = e.kind == op::io_uring_setup ? a[0] : a[1];
      if (!uring_) w_.mark_incomplete(incomplete_io_uring);  // else each request is decoded
  }
  emit(c);
}

}  // namespace fsrr::recorder
