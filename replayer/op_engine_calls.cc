// The replay of storage engines' requests from a replay thread (op_dispatch.h's op_runner):
// io_uring and AIO requests handed to the thread's engines (engine_requests.h) and their
// completions counted, and stores through a shared mapping.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "op_dispatch.h"
#include "schedule.h"
#include "syscall_result.h"

namespace fsrr {

bool op_runner::submit_request(const work_item& w) {
  const event& e = w.ev;
  const engine en = engine_of(e.via);
  if (en != engine::io_uring && en != engine::aio) return false;
  engine_stats& st = stats_.engines[static_cast<size_t>(en)];
  const int fd = fd_of(w.fx.h1);
  if (!s_.same_engines || fd < 0) {  // (no fd: the syscall fails with EBADF, as it would)
    ++st.as_syscalls;
    return false;
  }
  if (!requests_)
    requests_ = std::make_unique<engine_requests>(
        stats_.engines,
        [this](const work_item& d, int64_t res, uint64_t t0) { request_done(d, res, t0); });
  std::span<const uint8_t> data;
  std::span<uint8_t> sink;
  const op_class cls = info(e.kind).cls;
  if (cls == op_class::write) {
    const auto buf =
        fill(w.sources, s_.handles[w.fx.h1].key, static_cast<uint64_t>(e.offset), e.size);
    if (buf.size() < std::min<uint64_t>(e.size, max_io_bytes)) return false;
    data = buf;
  } else if (cls == op_class::read) {
    sink = s_.sink.first(std::min<uint64_t>(e.size, std::min(max_io_bytes, s_.sink.size())));
  }
  if (!requests_->submit(w, fd, data, sink, ops_finished_)) {
    ++st.as_syscalls;
    return false;
  }
  return true;
}

void op_runner::request_done(const work_item& w, int64_t res, uint64_t t0) {
  difference_ = false;
  listing_differs_ = false;
  uint64_t read = 0, written = 0;
  if (res > 0) {
    const op_class cls = info(w.ev.kind).cls;
    if (cls == op_class::read) read = static_cast<uint64_t>(res);
    if (cls == op_class::write) written = static_cast<uint64_t>(res);
  }
  stats_.bytes_read += read;
  stats_.bytes_written += written;
  count(w, res, ticks_.to_ns(ticks_.now() - t0));
  note_time(t0, read, written);
}

void op_runner::acknowledge() {
  if (!done_) return;
  uint64_t settled = ops_finished_;
  if (requests_ && !requests_->idle()) settled = std::min(settled, requests_->oldest());
  if (settled > acked_) {
    done_->advance(static_cast<uint32_t>(settled - acked_));
    acked_ = settled;
  }
}

void op_runner::settle_all() {
  if (requests_) requests_->drain();
  acknowledge();
}

// A page stored through a shared mapping of the file, as recorded: mapped and written. A
// page beyond the replayed file's end (SIGBUS) or a file that cannot be mapped (opened
// write-only) is written with pwrite instead, counted under as_syscalls.
int64_t op_runner::mapped_store(const work_item& w, int fd, std::span<const uint8_t> bytes) {
  engine_stats& st = stats_.engines[static_cast<size_t>(engine::mapped)];
  const event& e = w.ev;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = static_cast<uint64_t>(e.offset) & ~(page - 1);
  const uint64_t len = static_cast<uint64_t>(e.offset) - start + bytes.size();
  struct stat st_file;
  void* map = MAP_FAILED;
  if (!bytes.empty() && ::fstat(fd, &st_file) == 0 &&
      static_cast<uint64_t>(st_file.st_size) >= static_cast<uint64_t>(e.offset) + bytes.size())
    map = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
  // The pages made writable first: a file system that cannot back them (ENOSPC, EIO) says
  // so here, where a store would raise SIGBUS.
  if (map != MAP_FAILED && ::madvise(map, len, MADV_POPULATE_WRITE) != 0) {
    ::munmap(map, len);
    map = MAP_FAILED;
  }
  if (map == MAP_FAILED) {
    ++st.as_syscalls;
    return sys(::pwrite(fd, bytes.data(), bytes.size(), e.offset));
  }
  std::memcpy(static_cast<uint8_t*>(map) + (static_cast<uint64_t>(e.offset) - start),
              bytes.data(), bytes.size());
  ::munmap(map, len);
  ++st.requests;
  ++st.submits;
  return static_cast<int64_t>(bytes.size());
}

}  // namespace fsrr
