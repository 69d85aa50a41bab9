// The BPF ring buffer, read directly from its mapping. libbpf 1.1's ring_buffer hands records
// to a callback one at a time and cannot say how full the ring is; the drain needs both: to
// copy records out in batches, and to know when the paused workload may go on.
// The data pages are mapped once, not twice in a row as libbpf does so that a record
// crossing the end reads as one piece: every page of the second copy becomes resident too
// over a long recording (a 16 MiB ring took 32 MiB of RSS). The few records that cross the
// end are put together in a buffer of the reader's own instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "result.h"

namespace fsrr::recorder {

class ring_reader {
 public:
  // Maps `map_fd`, a BPF_MAP_TYPE_RINGBUF of `size` bytes (a power of two).
  static result<ring_reader> map(int map_fd, uint64_t size);
  ~ring_reader();
  ring_reader(ring_reader&& o) noexcept;
  ring_reader& operator=(ring_reader&&) = delete;

  uint64_t size() const { return size_; }
  uint64_t wrapped() const { return wrapped_count_; }  // records read across the end
  // Bytes the programs have committed or reserved that are not consumed yet.
  uint64_t pending() const;

  // Hands `sink` each committed record, in order, until the ring is empty, a record is still
  // being written, or `sink` returns false (it took none of that record). The space is given
  // back to the kernel once per call. Returns the bytes consumed.
  template <class Sink>
  uint64_t consume(Sink&& sink) {
    uint64_t cons = load_acquire(consumer_), start = cons;
    const uint64_t prod = load_acquire(producer_);
    while (cons < prod) {
      // Records are 8-aligned and the size a power of two: a header never crosses the end.
      const uint64_t off = cons & (size_ - 1);
      const uint32_t len = load_acquire32(data_ + off);
      if (len & busy_bit) break;  // reserved, not committed yet
      const uint32_t body = len & ~(busy_bit | discard_bit);
      if (!(len & discard_bit) && !sink(record_at((off + header_size) & (size_ - 1), body))) break;
      cons += (body + header_size + 7) & ~uint64_t{7};
    }
    if (cons != start) store_release(consumer_, cons);
    return cons - start;
  }

 private:
  static constexpr uint32_t busy_bit = 1u << 31, discard_bit = 1u << 30;
  static constexpr uint32_t header_size = 8;
  static uint64_t load_acquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
  static uint32_t load_acquire32(const uint8_t* p) {
    return __atomic_load_n(reinterpret_cast<const uint32_t*>(p), __ATOMIC_ACQUIRE);
  }
  static void store_release(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

  ring_reader(uint64_t size, size_t page) : size_(size), page_(page) {}

  // The `n` bytes at offset `off` (< size_) of the data, in one piece.
  std::span<const uint8_t> record_at(uint64_t off, uint32_t n) {
    if (off + n <= size_) return {data_ + off, n};
    const uint64_t first = size_ - off;  // before the end; the rest from the start
    ++wrapped_count_;
    wrapped_.resize(n);
    std::memcpy(wrapped_.data(), data_ + off, first);
    std::memcpy(wrapped_.data() + first, data_, n - first);
    return {wrapped_.data(), n};
  }

  uint64_t size_;
  size_t page_;
  uint64_t* consumer_ = nullptr;        // page 0, ours to write
  const uint64_t* producer_ = nullptr;  // page 1, read-only
  const uint8_t* data_ = nullptr;       // the data pages
  void* ro_map_ = nullptr;
  std::vector<uint8_t> wrapped_;        // the last record that crossed the end
  uint64_t wrapped_count_ = 0;
};

}  // namespace fsrr::recorder
