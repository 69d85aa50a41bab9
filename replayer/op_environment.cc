// What a replay does where the target refuses a call the recording's file system allowed, for
// reasons of its own (environment.h): the recorded effect, produced another way.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "kernel_constants.h"
#include "op_dispatch.h"
#include "syscall_result.h"

namespace fsrr {
namespace {

constexpr size_t chunk = size_t{1} << 17;

// Copies up to `len` bytes (to EOF) from `in` at `in_off` to `out` at `out_off`; an offset
// of -1 uses and advances the fd's position. Returns the bytes copied or -errno.
int64_t copy_range(int in, int64_t in_off, int out, int64_t out_off, uint64_t len) {
  std::vector<uint8_t> buf(chunk);
  uint64_t done = 0;
  while (done < len) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk, len - done));
    const ssize_t n = in_off < 0 ? ::read(in, buf.data(), want)
                                 : ::pread(in, buf.data(), want, in_off + static_cast<int64_t>(done));
    if (n < 0) return done ? static_cast<int64_t>(done) : -errno;
    if (n == 0) break;
    for (ssize_t put = 0; put < n;) {
      const ssize_t m = out_off < 0
                            ? ::write(out, buf.data() + put, static_cast<size_t>(n - put))
                            : ::pwrite(out, buf.data() + put, static_cast<size_t>(n - put),
                                       out_off + static_cast<int64_t>(done) + put);
      if (m < 0) return done ? static_cast<int64_t>(done) : -errno;
      put += m;
    }
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
}

// Zeros over [offset, offset + len) of fd.
int64_t write_zeros(int fd, int64_t offset, uint64_t len) {
  const std::vector<uint8_t> zeros(chunk, 0);
  for (uint64_t done = 0; done < len;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, len - done));
    const ssize_t m = ::pwrite(fd, zeros.data(), n, offset + static_cast<int64_t>(done));
    if (m < 0) return -errno;
    done += static_cast<uint64_t>(m);
  }
  return 0;
}

}  // namespace

int64_t op_runner::produce_effect(const work_item& w, int64_t refused, env_cause cause) {
  const event& e = w.ev;
  switch (cause) {
    case env_cause::cross_device:
      if (e.kind == op::copy_file_range) return copy_by_hand(w);
      if (e.kind == op::rename || e.kind == op::renameat || e.kind == op::renameat2)
        return move_by_hand(w, refused);
      return refused;  // a hard link across file systems has no other way
    case env_cause::no_clone:
      return clone_by_hand(w);
    case env_cause::no_fallocate:
      return fallocate_by_hand(w);
    case env_cause::no_direct_io: {  // buffered instead
      work_item again = w;
      again.ev.flags &= ~static_cast<uint32_t>(O_DIRECT);
      return open_file(again);
    }
    default:  // xattrs, link counts, name lengths the target lacks: nothing stands in
      return refused;
  }
}

// copy_file_range between file systems: through user space, as cp falls back to.
int64_t op_runner::copy_by_hand(const work_item& w) {
  const event& e = w.ev;
  const int in = fd_of(w.fx.h1), out = fd_of(w.fx.h2);
  if (in < 0 || out < 0) return -EBADF;
  const int64_t r =
      copy_range(in, w.fx.pos1 ? -1 : e.offset, out, w.fx.pos2 ? -1 : e.offset2, e.size);
  if (r > 0) {
    stats_.bytes_read += static_cast<uint64_t>(r);
    stats_.bytes_written += static_cast<uint64_t>(r);
  }
  return r;
}

// A clone the target cannot make: the same bytes, copied.
int64_t op_runner::clone_by_hand(const work_item& w) {
  const event& e = w.ev;
  const int dst = fd_of(w.fx.h1), src = fd_of(w.fx.h2);
  if (dst < 0 || src < 0) return -EBADF;
  int64_t r;
  if (e.aux == FSRR_FICLONE) {  // the whole file: dst becomes src
    struct stat st;
    if (::fstat(src, &st) != 0 || ::ftruncate(dst, 0) != 0) return -errno;
    r = copy_range(src, 0, dst, 0, static_cast<uint64_t>(st.st_size));
  } else {  // FICLONERANGE: src_offset, length (0: to the end), dest_offset
    r = copy_range(src, e.offset, dst, e.offset2, e.size ? e.size : UINT64_MAX);
  }
  if (r < 0) return r;
  stats_.bytes_read += static_cast<uint64_t>(r);
  stats_.bytes_written += static_cast<uint64_t>(r);
  return 0;
}

// A fallocate mode the target lacks: what it would leave visible (size, zeros).
int64_t op_runner::fallocate_by_hand(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  if (fd < 0) return -EBADF;
  struct stat st;
  if (::fstat(fd, &st) != 0) return -errno;
  const int mode = static_cast<int>(e.flags);
  const int64_t end = e.offset + static_cast<int64_t>(e.size);
  if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
    const int64_t stop = (mode & FALLOC_FL_KEEP_SIZE) ? std::min<int64_t>(end, st.st_size) : end;
    if (stop > e.offset) {
      const int64_t z = write_zeros(fd, e.offset, static_cast<uint64_t>(stop - e.offset));
      if (z < 0) return z;
    }
    return 0;
  }
  if (!(mode & FALLOC_FL_KEEP_SIZE) && end > st.st_size) return sys(::ftruncate(fd, end));
  return 0;  // KEEP_SIZE: blocks only, nothing to see
}

// A rename across the target's file systems (the replay's source placement): a file is
// copied and its old name removed, as mv does; a directory is not moved.
int64_t op_runner::move_by_hand(const work_item& w, int64_t refused) {
  if (!w.p1 || !w.p2 || !S_ISREG(w.ftype)) return refused;
  owned_fd src{open_path(w.p1, O_RDONLY | O_NOFOLLOW)};
  if (src.fd < 0) return src.fd;
  struct stat st;
  if (::fstat(src.fd, &st) != 0) return -errno;
  owned_fd dst{open_path(w.p2, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW)};
  if (dst.fd < 0) return dst.fd;
  const int64_t r = copy_range(src.fd, 0, dst.fd, 0, static_cast<uint64_t>(st.st_size));
  if (r < 0) return r;
  ::fchmod(dst.fd, st.st_mode & 07777);
  const int d = dir_fd(w.p1);
  if (d < 0) return d;
  return sys(::unlinkat(d, w.p1->name(), 0));
}

}  // namespace fsrr
