// The decoder's inodes by (dev, ino), in two generations of open addressing: when the young
// one holds `per_generation` inodes it becomes the old one and the old one is dropped, so
// memory stays bounded however many files a long recording meets. An inode found in the old
// generation moves to the young one. Every open, fd and stat of the workload looks one up: a
// flat table reads a slot or two where std::unordered_map chased three pointers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "event.h"
#include "hash.h"

namespace fsrr::recorder {

struct inode_state {
  uint32_t gen = 0;  // the kernel's i_generation, once an fd showed it
  uint32_t incarnation = 0;
  file_id id = no_id;
  bool gen_known = false;
};

class inode_table {
 public:
  explicit inode_table(uint32_t per_generation = 1u << 16)
      : per_generation_(std::max(per_generation, 1u)) {}

  // The entry for (dev, ino), valid until the next call; `added` when it is a fresh one (all
  // fields at their defaults).
  std::pair<inode_state&, bool> at(uint64_t dev, uint64_t ino) {
    const uint64_t h = mix64(dev, ino);
    if (inode_state* s = young_.find(dev, ino, h)) return {*s, false};
    // Looked up before the young generation can turn old and drop this one.
    const inode_state* in_old = old_.find(dev, ino, h);
    const inode_state was = in_old ? *in_old : inode_state{};
    const bool ages = young_.count >= per_generation_;
    if (ages) {
      old_ = std::move(young_);
      young_ = generation();
      moved_ = 0;
    }
    inode_state& s = young_.insert(dev, ino, h, per_generation_);
    if (in_old) s = was;
    if (in_old && !ages) ++moved_;  // its stale copy stays behind, shadowed by this one
    return {s, in_old == nullptr};
  }

  // Inodes held (an entry moved to the young generation counts once).
  size_t size() const { return young_.count + old_.count - moved_; }

 private:
  struct slot {
    uint64_t dev = 0;
    uint64_t ino = 0;
    inode_state s;
    bool used = false;
  };
  // Grows by doubling up to twice `most` slots, so that it is never more than half full.
  struct generation {
    std::unique_ptr<slot[]> slots;
    size_t mask = 0;
    uint32_t count = 0;
    inode_state* find(uint64_t dev, uint64_t ino, uint64_t h) {
      if (!slots) return nullptr;
      for (size_t i = h & mask;; i = (i + 1) & mask) {
        slot& x = slots[i];
        if (!x.used) return nullptr;
        if (x.ino == ino && x.dev == dev) return &x.s;
      }
    }
    inode_state& insert(uint64_t dev, uint64_t ino, uint64_t h, uint32_t most) {  // not there
      if (!slots || (size_t(count) + 1) * 2 > mask + 1) grow(most);
      slot& x = place(dev, ino, h);
      x.used = true;
      ++count;
      return x.s;
    }
    slot& place(uint64_t dev, uint64_t ino, uint64_t h) {
      size_t i = h & mask;
      while (slots[i].used) i = (i + 1) & mask;
      slots[i].dev = dev;
      slots[i].ino = ino;
      return slots[i];
    }
    void grow(uint32_t most) {
      size_t n = slots ? (mask + 1) * 2 : 1024;
      while (n < size_t(std::min<uint64_t>(count + 1, most)) * 2) n *= 2;
      std::unique_ptr<slot[]> old = std::move(slots);
      const size_t old_size = old ? mask + 1 : 0;
      slots = std::make_unique<slot[]>(n);
      mask = n - 1;
      for (size_t i = 0; i < old_size; ++i)
        if (old[i].used) {
          slot& x = place(old[i].dev, old[i].ino, mix64(old[i].dev, old[i].ino));
          x.s = old[i].s;
          x.used = true;
        }
    }
  };

  uint32_t per_generation_;
  generation young_, old_;
  uint32_t moved_ = 0;  // entries of old_ that have a copy in young_
};

}  // namespace fsrr::recorder
