#include "ring_reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "trace_error.h"

namespace fsrr::recorder {

ring_reader::ring_reader(int map_fd, uint64_t size)
    : size_(size), page_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))) {
  void* rw = ::mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
  if (rw == MAP_FAILED)
    throw trace_error(fmt::format("cannot map the ring buffer: {}", std::strerror(errno)));
  // The producer page, then the data twice: a record that wraps reads as one piece.
  ro_map_ = ::mmap(nullptr, page_ + 2 * size, PROT_READ, MAP_SHARED, map_fd,
                   static_cast<off_t>(page_));
  if (ro_map_ == MAP_FAILED) {
    const int err = errno;
    ::munmap(rw, page_);
    throw trace_error(fmt::format("cannot map the ring buffer: {}", std::strerror(err)));
  }
  consumer_ = static_cast<uint64_t*>(rw);
  producer_ = static_cast<const uint64_t*>(ro_map_);
  data_ = static_cast<const uint8_t*>(ro_map_) + page_;
}

ring_reader::~ring_reader() {
  ::munmap(ro_map_, page_ + 2 * size_);
  ::munmap(consumer_, page_);
}

uint64_t ring_reader::pending() const {
  return load_acquire(producer_) - load_acquire(consumer_);
}

}  // namespace fsrr::recorder
