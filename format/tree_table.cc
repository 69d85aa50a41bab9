#include "tree_table.h"

namespace fsrr {
namespace {

uint8_t* put(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// The table writes what it reads: no bounds to check, but a varint never runs past 10 bytes.
uint64_t get(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) break;
  }
  return v;
}

// Differences as unsigned wrap-around, folded so that small ones either way are small.
uint64_t zig(uint64_t now, uint64_t before) {
  const uint64_t d = now - before;
  return (d << 1) ^ (0 - (d >> 63));
}
uint64_t unzig(uint64_t z, uint64_t before) { return before + ((z >> 1) ^ (0 - (z & 1))); }

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
int64_t s(uint64_t v) { return static_cast<int64_t>(v); }

// The fields a tree_entry and a packed entry share, from one to the other.
template <typename From, typename To>
void copy_fields(const From& f, To& t) {
  t.path = f.path;
  t.mode = f.mode;
  t.uid = f.uid;
  t.gid = f.gid;
  t.size = f.size;
  t.allocated = f.allocated;
  t.atime_ns = f.atime_ns;
  t.mtime_ns = f.mtime_ns;
  t.ctime_ns = f.ctime_ns;
  t.nlink = f.nlink;
  t.link_group = f.link_group;
  t.target = f.target;
  t.file = f.file;
}

// What a file of `size` bytes usually has allocated: whole 4 KiB blocks.
uint64_t usual_allocation(uint64_t size) { return (size + 4095) & ~uint64_t{4095}; }

}  // namespace

// The fields in order, each against `prev`: path, file (differences), mode, uid, gid (xor),
// size, allocated (against the usual for the size), mtime (difference), atime, ctime
// (against the mtime), nlink, link group, target, more.
const uint8_t* tree_table::decode(const uint8_t* p, const packed& prev, packed& o) {
  o.path = static_cast<path_id>(unzig(get(p), prev.path));
  o.file = static_cast<file_id>(unzig(get(p), prev.file));
  o.mode = static_cast<uint32_t>(get(p) ^ prev.mode);
  o.uid = static_cast<uint32_t>(get(p) ^ prev.uid);
  o.gid = static_cast<uint32_t>(get(p) ^ prev.gid);
  o.size = get(p);
  o.allocated = unzig(get(p), usual_allocation(o.size));
  o.mtime_ns = s(unzig(get(p), u(prev.mtime_ns)));
  o.atime_ns = s(unzig(get(p), u(o.mtime_ns)));
  o.ctime_ns = s(unzig(get(p), u(o.mtime_ns)));
  o.nlink = static_cast<uint32_t>(get(p));
  o.link_group = static_cast<uint32_t>(get(p));
  o.target = static_cast<string_id>(get(p));
  o.more = static_cast<uint32_t>(get(p));
  return p;
}

void tree_table::push_back(const tree_entry& e) {
  packed n;
  copy_fields(e, n);
  if (!e.xattrs.empty() || !e.extents.empty()) {
    more_.push_back({e.xattrs, e.extents});
    n.more = static_cast<uint32_t>(more_.size());
  }
  if (size_ % group == 0) {
    if (chunk_bytes - used_ < max_group_bytes) {
      chunks_.push_back(std::make_unique<uint8_t[]>(chunk_bytes));
      used_ = 0;
    }
    groups_.push_back(uint64_t{chunks_.size() - 1} << 32 | used_);
    last_ = packed{};
  }
  const packed& prev = last_;
  uint8_t* const start = chunks_.back().get() + used_;
  uint8_t* p = start;
  p = put(p, zig(n.path, prev.path));
  p = put(p, zig(n.file, prev.file));
  p = put(p, n.mode ^ prev.mode);
  p = put(p, n.uid ^ prev.uid);
  p = put(p, n.gid ^ prev.gid);
  p = put(p, n.size);
  p = put(p, zig(n.allocated, usual_allocation(n.size)));
  p = put(p, zig(u(n.mtime_ns), u(prev.mtime_ns)));
  p = put(p, zig(u(n.atime_ns), u(n.mtime_ns)));
  p = put(p, zig(u(n.ctime_ns), u(n.mtime_ns)));
  p = put(p, n.nlink);
  p = put(p, n.link_group);
  p = put(p, n.target);
  p = put(p, n.more);
  used_ += static_cast<size_t>(p - start);
  last_ = n;
  ++size_;
}

const uint8_t* tree_table::group_start(size_t g) const {
  const uint64_t at = groups_[g];
  return chunks_[at >> 32].get() + (at & 0xffffffffu);
}

tree_entry tree_table::entry(const packed& p) const {
  tree_entry e;
  copy_fields(p, e);
  if (p.more) {
    const rare& r = more_[p.more - 1];
    e.xattrs = r.xattrs;
    e.extents = r.extents;
  }
  return e;
}

tree_entry tree_table::operator[](size_t i) const {
  const uint8_t* p = group_start(i / group);
  packed cur;
  for (size_t k = 0; k <= i % group; ++k) {
    const packed prev = cur;
    p = decode(p, k == 0 ? packed{} : prev, cur);
  }
  return entry(cur);
}

size_t tree_table::encoded_bytes() const {
  return chunks_.size() * chunk_bytes + groups_.capacity() * sizeof(uint64_t);
}

tree_table::iterator::iterator(const tree_table* t, size_t i) : t_(t), i_(i) {
  if (i_ >= t_->size()) return;
  const uint8_t* p = t_->group_start(i_ / group);
  for (size_t k = 0; k <= i_ % group; ++k) {
    const packed prev = cur_;
    p = decode(p, k == 0 ? packed{} : prev, cur_);
  }
  at_ = p;
}

tree_table::iterator& tree_table::iterator::operator++() {
  if (++i_ >= t_->size()) return *this;
  if (i_ % group == 0) {
    at_ = decode(t_->group_start(i_ / group), packed{}, cur_);
  } else {
    const packed prev = cur_;
    at_ = decode(at_, prev, cur_);
  }
  return *this;
}

}  // namespace fsrr
