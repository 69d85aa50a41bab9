// The decoder's inodes by (dev, ino), in two generations of open addressing: when the young
// one holds `per_generation` inodes it becomes the old one and the old one is dropped, so
// memory stays bounded however many files a long recording meets. An inode found in the old
// generation moves to the young one. Every open, fd and stat of the workload looks one up:
// a flat table costs one cache line where std::unordered_map chased three pointers.
#pragma once

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
      : per_generation_(per_generation), young_(per_generation), old_(0) {}

  // The entry for (dev, ino); `added` when it is a fresh one (all fields at their defaults).
  std::pair<inode_state&, bool> at(uint64_t dev, uint64_t ino) {
    const uint64_t h = mix64(dev, ino);
    if (inode_state* s = young_.find(dev, ino, h)) return {*s, false};
    if (young_.count >= per_generation_) {
      old_ = std::move(young_);
      young_ = generation(per_generation_);
    }
    const inode_state* was = old_.find(dev, ino, h);  // still the old generation's
    inode_state& s = young_.insert(dev, ino, h);
    if (was) s = *was;  // the stale copy stays behind: the young one is looked at first
    return {s, was == nullptr};
  }

  size_t size() const { return young_.count + old_.count; }

 private:
  struct slot {
    uint64_t dev = 0;
    uint64_t ino = 0;
    inode_state s;
    bool used = false;
  };
  struct generation {
    std::unique_ptr<slot[]> slots;
    size_t mask = 0;
    uint32_t count = 0;
    explicit generation(uint32_t most) {
      if (!most) return;
      size_t n = 16;
      while (n < size_t(most) * 2) n *= 2;  // at most half full
      slots = std::make_unique<slot[]>(n);
      mask = n - 1;
    }
    inode_state* find(uint64_t dev, uint64_t ino, uint64_t h) {
      if (!slots) return nullptr;
      for (size_t i = h & mask;; i = (i + 1) & mask) {
        slot& x = slots[i];
        if (!x.used) return nullptr;
        if (x.ino == ino && x.dev == dev) return &x.s;
      }
    }
    inode_state& insert(uint64_t dev, uint64_t ino, uint64_t h) {  // not there, and room
      size_t i = h & mask;
      while (slots[i].used) i = (i + 1) & mask;
      slots[i].dev = dev;
      slots[i].ino = ino;
      slots[i].used = true;
      ++count;
      return slots[i].s;
    }
  };

  uint32_t per_generation_;
  generation young_, old_;
};

}  // namespace fsrr::recorder
