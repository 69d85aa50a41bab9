// The replay of storage engines' requests from a replay thread (op_dispatch.h's op_runner):
// io_uring and AIO requests handed to the thread's engines (engine_requests.h) and their
// completions counted, and stores through a shared mapping.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
  if (e.kind == op::splice) return false;  // between two pipes: not issued (splice_side)
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
  const bool append = s_.handles[w.fx.h1].flags & O_APPEND;
  if (!requests_->submit(w, fd, data, sink, ops_finished_, append)) {
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

// A page stored through a shared mapping of the file, as recorded: written through a window
// of the file mapped shared, its pages made writable first (a file system that cannot back
// them, ENOSPC or EIO, says so there, where a store would raise SIGBUS). A page beyond the
// replayed file's end or a file that cannot be mapped (opened write-only) is written with
// pwrite instead, counted under as_syscalls.
int64_t op_runner::mapped_store(const work_item& w, int fd, std::span<const uint8_t> bytes) {
  engine_stats& st = stats_.engines[static_cast<size_t>(engine::mapped)];
  const event& e = w.ev;
  // (a hostile trace's offset may be negative, or its end past 2^64: not mapped)
  map_window* win = bytes.empty() || e.offset < 0 ||
                            bytes.size() > UINT64_MAX - static_cast<uint64_t>(e.offset)
                        ? nullptr
                        : window_for(fd, static_cast<uint64_t>(e.offset), bytes.size());
  if (!win) {
    ++st.as_syscalls;
    return sys(::pwrite(fd, bytes.data(), bytes.size(), e.offset));
  }
  std::memcpy(win->at + (static_cast<uint64_t>(e.offset) - win->start), bytes.data(),
              bytes.size());
  ++st.requests;
  ++st.submits;
  return static_cast<int64_t>(bytes.size());
}

// The window of fd's file that holds [offset, offset + size), mapped and its pages there made
// writable; null where that cannot be had.
op_runner::map_window* op_runner::window_for(int fd, uint64_t offset, uint64_t size) {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  struct stat st;
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < offset + size) return nullptr;
  const auto file_size = static_cast<uint64_t>(st.st_size);
  map_window* win = nullptr;
  for (auto it = windows_.begin(); it != windows_.end(); ++it) {
    if (it->dev != st.st_dev || it->ino != st.st_ino) continue;
    if (file_size < it->size) {  // cut since: its pages past the end are gone
      ::munmap(it->at, it->len);
      windows_.erase(it);
      break;
    }
    if (offset >= it->start && offset + size <= it->start + it->len) {
      win = &*it;
      break;
    }
  }
  if (!win) {
    const uint64_t start = offset & ~(window_bytes - 1);
    const uint64_t end = std::min(start + window_bytes, (file_size + page - 1) & ~(page - 1));
    if (offset + size > end) return nullptr;  // across windows: not kept
    void* map = ::mmap(nullptr, end - start, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                       static_cast<off_t>(start));
    if (map == MAP_FAILED) return nullptr;
    if (windows_.size() == map_windows) {
      ::munmap(windows_.front().at, windows_.front().len);
      windows_.erase(windows_.begin());
    }
    windows_.push_back({st.st_dev, st.st_ino, start, end - start, file_size,
                        static_cast<uint8_t*>(map)});
    win = &windows_.back();
  }
  // Made writable before every store, not once: writeback write-protects a page again, and
  // the fault of the next store is where a file system that cannot back it (ENOSPC, EDQUOT,
  // EIO) would raise SIGBUS.
  const uint64_t first = (offset - win->start) & ~(page - 1);
  const uint64_t last = (offset + size - 1 - win->start) & ~(page - 1);
  if (::madvise(win->at + first, last - first + page, MADV_POPULATE_WRITE) != 0) return nullptr;
  return win;
}

void op_runner::drop_windows() {
  for (const map_window& w : windows_) ::munmap(w.at, w.len);
  windows_.clear();
}

}  // namespace fsrr
