// The initial tree as a trace reader keeps it: 80 bytes an entry, with the few entries' xattrs
// and extents in a side table, where a tree_entry with its two vectors takes 120. Entries are
// handed out by value; the table grows a chunk at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>

#include "event.h"

namespace fsrr {

class tree_table {
 public:
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  tree_entry operator[](size_t i) const;
  void push_back(const tree_entry& e);

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = tree_entry;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = tree_entry;
    iterator(const tree_table* t, size_t i) : t_(t), i_(i) {}
    tree_entry operator*() const { return (*t_)[i_]; }
    iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const tree_table* t_;
    size_t i_;
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

 private:
  struct packed {
    path_id path;
    uint32_t mode, uid, gid;
    uint64_t size, allocated;
    int64_t atime_ns, mtime_ns, ctime_ns;
    uint32_t nlink, link_group;
    string_id target;
    file_id file;
    uint32_t more;  // 1 + its index in more_, or 0: no xattrs, no extents
  };
  static_assert(sizeof(packed) == 80);
  struct rare {
    std::vector<tree_entry::xattr> xattrs;
    std::vector<tree_entry::extent> extents;
  };
  std::deque<packed> entries_;
  std::deque<rare> more_;
};

}  // namespace fsrr
