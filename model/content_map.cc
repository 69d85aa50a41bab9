#include "content_map.h"

#include <algorithm>
#include <limits>

#include "content_key.h"

namespace fsrr {

// ---- source_list ------------------------------------------------------------------------

uint64_t source_list::bytes() const {
  uint64_t n = 0;
  for (const source_piece& p : *this) n += p.length;
  return n;
}

void source_list::add(const source_piece& p) {
  if (p.length == 0) return;
  if (size_ > 0) {
    source_piece& last = more_.empty() ? one_ : more_.back();
    if (last.key == p.key && (p.key == zero_key || last.offset + last.length == p.offset)) {
      last.length += p.length;
      return;
    }
  }
  if (size_ == 0) {
    one_ = p;
  } else {
    if (more_.empty()) more_.push_back(one_);
    more_.push_back(p);
  }
  ++size_;
}

// ---- content_map ------------------------------------------------------------------------

size_t content_map::cut(uint64_t at, uint64_t end) {
  // the first extent ending after `at`
  auto it = std::upper_bound(x_.begin(), x_.end(), at,
                             [](uint64_t v, const extent& x) { return v < x.end; });
  size_t i = static_cast<size_t>(it - x_.begin());
  if (at >= end) return i;
  size_t j = i;
  while (j < x_.size() && x_[j].start < end) ++j;  // [i, j) overlap [at, end)
  if (i == j) return i;
  const extent first = x_[i], last = x_[j - 1];
  std::vector<extent> keep;  // the parts of the overlapping extents outside [at, end)
  if (first.start < at) keep.push_back({first.start, at, first.key, first.offset});
  if (last.end > end)
    keep.push_back({end, last.end, last.key, last.offset + (end - last.start)});
  x_.erase(x_.begin() + static_cast<ptrdiff_t>(i), x_.begin() + static_cast<ptrdiff_t>(j));
  x_.insert(x_.begin() + static_cast<ptrdiff_t>(i), keep.begin(), keep.end());
  return i + (first.start < at ? 1 : 0);
}

void content_map::write(uint64_t at, const source_list& from) {
  const uint64_t n = from.bytes();
  if (n == 0) return;
  size_t i = cut(at, at + n);
  uint64_t pos = at;
  for (const source_piece& p : from) {
    if (p.key != zero_key) {
      extent* prev = i > 0 ? &x_[i - 1] : nullptr;
      if (prev && prev->end == pos && prev->key == p.key &&
          prev->offset + (pos - prev->start) == p.offset) {
        prev->end = pos + p.length;  // continues it: a file written in order
      } else {
        x_.insert(x_.begin() + static_cast<ptrdiff_t>(i), extent{pos, pos + p.length, p.key, p.offset});
        ++i;
      }
    }
    pos += p.length;
  }
  size_ = std::max(size_, at + n);
}

void content_map::read(uint64_t at, uint64_t length, source_list& out) const {
  if (at >= size_) return;
  const uint64_t end = at + std::min(length, size_ - at);
  auto it = std::upper_bound(x_.begin(), x_.end(), at,
                             [](uint64_t v, const extent& x) { return v < x.end; });
  uint64_t pos = at;
  for (; it != x_.end() && it->start < end; ++it) {
    if (it->start > pos) out.add({zero_key, 0, it->start - pos});
    const uint64_t from = std::max(pos, it->start), to = std::min(end, it->end);
    out.add({it->key, it->offset + (from - it->start), to - from});
    pos = to;
  }
  if (pos < end) out.add({zero_key, 0, end - pos});
}

void content_map::resize(uint64_t size) {
  if (size < size_) cut(size, std::numeric_limits<uint64_t>::max());
  size_ = size;
}

void content_map::zero(uint64_t at, uint64_t length) {
  if (at < size_) cut(at, at + std::min(length, size_ - at));
}

content_map tree_content(const tree_entry& t) {
  content_map m;
  const uint64_t key = content_key(t.path);
  source_list part;
  if (t.extents.empty()) {
    part.add({key, 0, t.size});
    m.write(0, part);
  }
  for (const auto& x : t.extents) {  // sparse: only the data extents hold bytes
    if (x.offset >= t.size) continue;
    part.clear();
    part.add({key, x.offset, std::min(x.length, t.size - x.offset)});
    m.write(x.offset, part);
  }
  m.resize(t.size);
  return m;
}

}  // namespace fsrr
