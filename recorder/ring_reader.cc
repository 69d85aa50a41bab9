#include "ring_reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace fsrr::recorder {

result<ring_reader> ring_reader::map(int map_fd, uint64_t size) {
  ring_reader r(size, static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  void* rw = ::mmap(nullptr, r.page_, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
  if (rw == MAP_FAILED) return failure("cannot map the ring buffer: {}", std::strerror(errno));
  r.consumer_ = static_cast<uint64_t*>(rw);  // unmapped by r's destructor from here on
  // The producer page, then the data (once; see the header).
  void* ro = ::mmap(nullptr, r.page_ + size, PROT_READ, MAP_SHARED, map_fd,
                    static_cast<off_t>(r.page_));
  if (ro == MAP_FAILED) return failure("cannot map the ring buffer: {}", std::strerror(errno));
  r.ro_map_ = ro;
  r.producer_ = static_cast<const uint64_t*>(ro);
  r.data_ = static_cast<const uint8_t*>(ro) + r.page_;
  return r;
}

ring_reader::ring_reader(ring_reader&& o) noexcept
    : size_(o.size_),
      page_(o.page_),
      consumer_(std::exchange(o.consumer_, nullptr)),
      producer_(std::exchange(o.producer_, nullptr)),
      data_(std::exchange(o.data_, nullptr)),
      ro_map_(std::exchange(o.ro_map_, nullptr)),
      wrapped_(std::move(o.wrapped_)),
      wrapped_count_(o.wrapped_count_) {}

ring_reader::~ring_reader() {
  if (ro_map_) ::munmap(ro_map_, page_ + size_);
  if (consumer_) ::munmap(consumer_, page_);
}

uint64_t ring_reader::pending() const {
  return load_acquire(producer_) - load_acquire(consumer_);
}

}  // namespace fsrr::recorder
