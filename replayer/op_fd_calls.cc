// The replay of the calls on an open file that neither move bytes nor open or close it:
// clones (ioctl), fcntl, flock, and the fd's metadata calls (op_dispatch.h's op_runner).
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "cpu_spread.h"
#include "op_dispatch.h"
#include "syscall_result.h"

namespace fsrr {

int64_t op_runner::ioctl_op(const work_item& w) {
  const event& e = w.ev;
  if (e.aux != FICLONE && e.aux != FICLONERANGE) return not_issued;
  const int dst = fd_of(w.fx.h1), src = fd_of(w.fx.h2);
  if (dst < 0 || src < 0) return -EBADF;
  if (e.aux == FICLONE) return sys(::ioctl(dst, FICLONE, src));
  file_clone_range range{src, static_cast<uint64_t>(e.offset), e.size,
                         static_cast<uint64_t>(e.offset2)};
  return sys(::ioctl(dst, FICLONERANGE, &range));
}

int64_t op_runner::fcntl_op(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  switch (e.aux) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
    case F_SETFD:  // fd-table state, settled by the dispatcher
      return fd < 0 ? -EBADF : e.result;
    case F_GETFD:
      return fd < 0 ? -EBADF : sys(::fcntl(fd, F_GETFD));
    case F_GETFL: {  // without the O_NONBLOCK the replay's open added (open_file)
      if (fd < 0) return -EBADF;
      const int64_t r = sys(::fcntl(fd, F_GETFL));
      return r < 0 || (s_.handles[w.fx.h1].flags & O_NONBLOCK) ? r : r & ~int64_t{O_NONBLOCK};
    }
    case F_SETFL:
      return fd < 0 ? -EBADF : sys(::fcntl(fd, F_SETFL, static_cast<int>(e.flags)));
    default:  // locks, leases, pipe sizes: their argument is not in the trace
      return not_issued;
  }
}

int64_t op_runner::flock_op(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  if (fd < 0) return -EBADF;
  // Never block: a lock held by a thread that is behind would stall this one forever.
  const int how = static_cast<int>(e.flags) | LOCK_NB;
  int64_t r = sys(::flock(fd, how));
  if (r == -EWOULDBLOCK && !(e.flags & LOCK_NB) && e.result == 0) {
    const uint64_t give_up = monotonic_ns() + 10'000'000'000ull;
    cpu_seat::leave();  // it sleeps between tries
    while (r == -EWOULDBLOCK && monotonic_ns() < give_up && !s_.stop.load()) {
      ::usleep(1000);
      r = sys(::flock(fd, how));
    }
  }
  return r;
}

// The fd-only metadata and hint calls.
int64_t op_runner::fd_meta(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  if (fd < 0) return -EBADF;
  switch (e.kind) {
    case op::lseek: {
      handle_slot& h = s_.handles[w.fx.h1];
      h.listed_recorded = h.listed_replayed = 0;  // a listing read again starts afresh
      return sys(::lseek(fd, e.offset, static_cast<int>(e.aux)));
    }
    case op::fadvise64:
      return -::posix_fadvise(fd, e.offset, static_cast<off_t>(e.size), static_cast<int>(e.flags));
    case op::readahead:
      return sys(::readahead(fd, e.offset, e.size));
    case op::getdents:
    case op::getdents64: {
      const size_t n = std::min<uint64_t>(e.size, s_.sink.size());
#ifdef SYS_getdents
      if (e.kind == op::getdents) return sys(::syscall(SYS_getdents, fd, s_.sink.data(), n));
#endif
      return sys(::syscall(SYS_getdents64, fd, s_.sink.data(), n));
    }
    case op::fsync:
      return sys(::fsync(fd));
    case op::fdatasync:
      return sys(::fdatasync(fd));
    case op::sync_file_range:
      return sys(::sync_file_range(fd, e.offset, static_cast<off_t>(e.size), e.flags));
    case op::syncfs:
      return sys(::syncfs(fd));
    case op::ftruncate:
      return sys(::ftruncate(fd, static_cast<off_t>(e.size)));
    case op::fallocate:
      return sys(::fallocate(fd, static_cast<int>(e.flags), e.offset, static_cast<off_t>(e.size)));
    case op::fstat: {
      struct stat st;
      return sys(::fstat(fd, &st));
    }
    case op::fstatfs: {
      struct statfs sf;
      return sys(::fstatfs(fd, &sf));
    }
    default:
      return not_issued;
  }
}

}  // namespace fsrr
