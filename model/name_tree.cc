#include "name_tree.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <stdexcept>
#include <utility>

#include "hash.h"

namespace fsrr {

name_tree::name_tree(uint32_t root_value, name_source names) : names_(std::move(names)) {
  nodes_.emplace_back().value = root_value;
  slots_.resize(1024);
}

uint32_t name_tree::hash_of(id dir, std::string_view name) {
  return static_cast<uint32_t>(mix64(dir, std::hash<std::string_view>()(name)));
}

size_t name_tree::find_slot(id dir, std::string_view name, uint32_t h) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const slot& s = slots_[i];
    if (s.n == none) return i;
    if (nodes_[s.n].parent == dir && text(nodes_[s.n].name) == name) return i;
  }
}

name_tree::id name_tree::child(id dir, std::string_view name) const {
  if (slots_.empty()) return none;
  return slots_[find_slot(dir, name, hash_of(dir, name))].n;
}

void name_tree::insert(id n) {
  if ((used_ + 1) * 4 > slots_.size() * 3) grow();
  const node& x = nodes_[n];
  const std::string_view name = text(x.name);
  const uint32_t h = hash_of(x.parent, name);
  slot& s = slots_[find_slot(x.parent, name, h)];
  s = {n};
  ++used_;
  ++nodes_[x.parent].kids;
}

// Linear probing's deletion without tombstones: the entries after the hole that belong at or
// before it move back into it.
void name_tree::erase(id n) {
  const node& x = nodes_[n];
  const uint32_t h = hash_of(x.parent, text(x.name));
  const size_t mask = slots_.size() - 1;
  size_t hole = h & mask;
  while (slots_[hole].n != n) hole = (hole + 1) & mask;
  for (size_t j = (hole + 1) & mask; slots_[j].n != none; j = (j + 1) & mask) {
    const size_t home = home_of(slots_[j].n) & mask;
    // j's entry may fill the hole unless its home lies cyclically in (hole, j].
    const bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = {};
  --used_;
  --nodes_[x.parent].kids;
}

void name_tree::grow() {
  const std::vector<slot> old =
      std::exchange(slots_, std::vector<slot>(std::max<size_t>(1024, slots_.size() * 2)));
  const size_t mask = slots_.size() - 1;
  for (const slot& s : old) {
    if (s.n == none) continue;
    size_t i = home_of(s.n) & mask;
    while (slots_[i].n != none) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void name_tree::forget_name(node& x) {
  if (x.name & own) dead_bytes_ += arena_.get(x.name & ~own).size();
  x.name = 0;
}

void name_tree::set_name(id n, std::string_view name, name_ref ref) {
  if (ref == 0 || ref > own) ref = own;  // not one of the owner's
  node& x = nodes_[n];
  if (x.name && text(x.name) == name && (ref == own || x.name == ref)) return;
  forget_name(x);
  if (ref != own) {
    assert(names_(ref) == name);
    x.name = ref;
    return;
  }
  uint64_t at = arena_.add(name);
  if (at >= own) {  // the dead ones out, and again
    compact_names();
    at = arena_.add(name);
    if (at >= own) throw std::length_error("the end-state model's own names pass 2 GiB");
  }
  x.name = own | static_cast<uint32_t>(at);
  name_bytes_ += name.size();
  // Renames leave the old names behind: copied out once they are most of the arena.
  if (dead_bytes_ > (8u << 20) && dead_bytes_ * 2 > name_bytes_) compact_names();
}

void name_tree::compact_names() {
  name_arena fresh;
  for (node& x : nodes_) {
    if (!(x.name & own)) continue;
    const uint64_t at = fresh.add(arena_.get(x.name & ~own));
    if (at >= own) throw std::length_error("the end-state model's own names pass 2 GiB");
    x.name = own | static_cast<uint32_t>(at);
  }
  arena_ = std::move(fresh);
  name_bytes_ -= dead_bytes_;
  dead_bytes_ = 0;
  ++compactions_;
}

name_tree::id name_tree::add(id dir, std::string_view name, uint32_t value, name_ref ref) {
  id n;
  if (!free_.empty()) {
    n = free_.back();
    free_.pop_back();
    nodes_[n] = {};
  } else {
    n = static_cast<id>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[n].value = value;
  nodes_[n].parent = dir;
  set_name(n, name, ref);
  insert(n);
  return n;
}

void name_tree::unlink(id n) {
  erase(n);
  nodes_[n].parent = none;
}

void name_tree::link(id n, id dir, std::string_view name, name_ref ref) {
  nodes_[n].parent = dir;
  set_name(n, name, ref);
  insert(n);
}

void name_tree::drop(id n) {
  node& x = nodes_[n];
  forget_name(x);
  if (x.kids == 0 && !x.free) {
    x.free = 1;
    free_.push_back(n);
  }
}

void name_tree::forget_lookup() {
  slots_ = {};
  used_ = 0;
}

name_tree::index name_tree::ordered() const {
  index ix;
  // Counting sort by parent, then each directory's names sorted.
  ix.first_.assign(nodes_.size() + 1, 0);
  const auto linked = [&](id n, const node& x) { return n != root && x.parent != none; };
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (linked(static_cast<id>(n), nodes_[n])) ++ix.first_[nodes_[n].parent + 1];
  for (size_t i = 1; i < ix.first_.size(); ++i) ix.first_[i] += ix.first_[i - 1];
  ix.order_.resize(ix.first_.back());
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (linked(static_cast<id>(n), nodes_[n]))
      ix.order_[ix.first_[nodes_[n].parent]++] = static_cast<id>(n);
  // first_[p] is now where p's range ends, which is where p + 1's starts.
  for (size_t i = ix.first_.size() - 1; i > 0; --i) ix.first_[i] = ix.first_[i - 1];
  ix.first_[0] = 0;
  for (size_t p = 0; p + 1 < ix.first_.size(); ++p) {
    if (ix.first_[p + 1] - ix.first_[p] < 2) continue;
    std::sort(ix.order_.begin() + ix.first_[p], ix.order_.begin() + ix.first_[p + 1],
              [&](id a, id b) { return name(a) < name(b); });
  }
  return ix;
}

}  // namespace fsrr
