// The initial tree as a trace reader keeps it: each entry encoded against the one before it
// (a copy's source tree is mostly files of one owner and mode, made one after another, so the
// differences are small varints: ~20 bytes an entry where the fields take 80 and a tree_entry
// with its two vectors 120), in groups of 16 that start from nothing, so that entry i costs
// the decoding of at most 15 before it; the iterator decodes each entry once. The few entries'
// xattrs and extents are in a side table. Entries are handed out by value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <vector>

#include "event.h"

namespace fsrr {

class tree_table {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  tree_entry operator[](size_t i) const;
  void push_back(const tree_entry& e);
  size_t encoded_bytes() const;  // for memory accounting

  // The fields of an entry, as the encoding sees them.
  struct packed {
    path_id path = 0;
    uint32_t mode = 0, uid = 0, gid = 0;
    uint64_t size = 0, allocated = 0;
    int64_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0;
    uint32_t nlink = 0, link_group = 0;
    string_id target = 0;
    file_id file = 0;
    uint32_t more = 0;  // 1 + its index in more_, or 0: no xattrs, no extents
  };

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = tree_entry;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = tree_entry;
    iterator(const tree_table* t, size_t i);
    tree_entry operator*() const { return t_->entry(cur_); }
    iterator& operator++();
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const tree_table* t_;
    size_t i_;
    const uint8_t* at_ = nullptr;  // the encoding of entry i_ + 1
    packed cur_;                   // entry i_
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

 private:
  static constexpr size_t group = 16;
  static constexpr size_t chunk_bytes = size_t{1} << 18;
  // An entry takes at most 14 varints of at most 10 bytes: a group always fits in what a chunk
  // has left when it starts with this much.
  static constexpr size_t max_group_bytes = group * 14 * 10;

  struct rare {
    std::vector<tree_entry::xattr> xattrs;
    std::vector<tree_entry::extent> extents;
  };
  // Decodes the entry at `p` against `prev` (the one before it in its group, or all zero).
  static const uint8_t* decode(const uint8_t* p, const packed& prev, packed& out);
  tree_entry entry(const packed& p) const;
  const uint8_t* group_start(size_t g) const;

  std::vector<std::unique_ptr<uint8_t[]>> chunks_;
  size_t used_ = chunk_bytes;  // bytes of the last chunk in use
  std::vector<uint64_t> groups_;  // by group: chunk << 32 | offset of its first entry
  packed last_;                   // the entry last pushed
  size_t size_ = 0;
  std::deque<rare> more_;
};

}  // namespace fsrr
