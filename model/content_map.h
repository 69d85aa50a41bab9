// What a file holds, as the data generator names it: pieces of data_source::fill(key,
// offset), extent by extent, holes as zeros (data_flow.h works out which, op by op).
#pragma once

#include <cstdint>
#include <vector>

#include "event.h"

namespace fsrr {

// `length` bytes of data_source::fill(key, offset + ...).
struct source_piece {
  uint64_t key = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const source_piece&) const = default;
};
inline constexpr uint64_t zero_key = ~uint64_t{0};  // zeros: holes, /dev/zero

// The pieces of one write, in order: almost always one, kept in place.
class source_list {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const source_piece* begin() const { return more_.empty() ? &one_ : more_.data(); }
  const source_piece* end() const { return begin() + size_; }
  uint64_t bytes() const;
  void clear() {
    size_ = 0;
    more_.clear();
  }
  // Appends, joined to the last piece where it continues it.
  void add(const source_piece& p);

 private:
  uint32_t size_ = 0;
  source_piece one_;
  std::vector<source_piece> more_;
};

// A file's bytes as pieces: [start, end) -> key@offset; what lies between extents, up to the
// size, is zeros (holes). Kept in a sorted vector: a file is mostly one extent, written in
// order at its end.
class content_map {
 public:
  uint64_t size() const { return size_; }
  // The pieces of [at, at + length), clipped to the size; holes as zero_key pieces.
  void read(uint64_t at, uint64_t length, source_list& out) const;
  // [at, at + from.bytes()) now holds `from`; the size grows to cover it.
  void write(uint64_t at, const source_list& from);
  void resize(uint64_t size);                   // cut, or grow with zeros
  void zero(uint64_t at, uint64_t length);      // punched or zeroed, size unchanged
  size_t extents() const { return x_.size(); }  // for memory accounting

 private:
  struct extent {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t key = 0;
    uint64_t offset = 0;
  };
  // No extent overlaps [at, end) afterwards; returns where extents at or after `end` begin.
  size_t cut(uint64_t at, uint64_t end);
  std::vector<extent> x_;
  uint64_t size_ = 0;
};

// What prepare writes into a file of the initial tree.
content_map tree_content(const tree_entry& t);

}  // namespace fsrr
