// Cross-thread ordering. Each replay thread ("lane") counts the ops it has finished; an op on a
// file, path or open file waits until the lanes that ran the ops it depends on have reached
// them. An op depends on the earlier ops on the same key that had ended before it started in
// the recording: ops that overlapped in the recording were not ordered by anything and may
// overlap again, so a thread blocked in the recording (a lock, a long fsync) cannot deadlock
// the replay. The dispatcher assigns ops in trace order, so the earliest unfinished op only
// ever waits on finished ones: the replay always makes progress.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "order_keys.h"

namespace fsrr {

// A count other threads can sleep on until it reaches a value. Counts wrap around; waiters
// only ever wait for values less than 2^31 ahead.
struct alignas(64) progress_counter {
  std::atomic<uint32_t> value{0};
  mutable std::atomic<uint32_t> sleepers{0};
  // The lowest value a sleeper waits for: advance() wakes only when it is reached, so a waiter
  // for the n-th next op costs one wake-up, not n.
  mutable std::atomic<uint64_t> wake_at{unarmed};
  static constexpr uint64_t unarmed = uint64_t{1} << 63;
  bool remote = false;  // advanced by a message from another process (peers.h)

  void advance(uint32_t n = 1);
  bool reached(uint32_t target) const {
    return static_cast<int32_t>(value.load(std::memory_order_acquire) - target) >= 0;
  }
  // Returns when value >= target or `stop` is set (checked at least every 50 ms). Spins
  // `spin_ns` before it sleeps, or a few microseconds for 0.
  void wait(uint32_t target, const std::atomic<bool>& stop, uint64_t spin_ns = 0) const;
};

// Op `count - 1` of `lane` (a lane's ops are numbered from 0) must have finished.
struct dependency {
  const progress_counter* lane = nullptr;
  uint32_t count = 0;
};

// The dependencies of one op: at most one per lane (the latest), no allocation for a few.
class dep_list {
 public:
  void clear() {
    n_ = 0;
    more_.clear();
  }
  void add(dependency d);
  size_t size() const { return n_ + more_.size(); }
  const dependency& operator[](size_t i) const { return i < n_ ? inline_[i] : more_[i - n_]; }
  bool reached() const;
  // One of the ops not yet reached is another process's (a remote lane's).
  bool waits_remote() const;
  void wait(const std::atomic<bool>& stop, uint64_t spin_ns = 0) const;

 private:
  static constexpr uint32_t inline_capacity = 6;
  uint32_t n_ = 0;
  std::array<dependency, inline_capacity> inline_{};
  std::vector<dependency> more_;
};

// Which earlier ops each new op must wait for; used by the dispatcher only.
class order_tracker {
 public:
  order_tracker();
  // Op number `index` of `lane`, recorded over [ts, end], touches `keys` (distinct, non-zero,
  // possibly marked order_all, order_race or order_shared).
  // Adds to `deps` the ops on other lanes it must wait for.
  void add(const progress_counter* lane, uint32_t index, uint64_t ts, uint64_t end,
           std::span<const uint64_t> keys, dep_list& deps);
  size_t tracked_keys() const { return used_; }

 private:
  struct entry {
    const progress_counter* lane;
    uint32_t count;
    uint64_t ts, end;
  };
  // A lane's latest two shared uses of a key: the earlier one had ended before the later one
  // started, so one of them is the latest that ended before any newer op.
  struct shared_use {
    const progress_counter* lane;
    uint32_t count, earlier;  // earlier: 0 if none
    uint64_t end;             // of `count`
  };
  struct slot {
    uint64_t key = 0;
    std::vector<entry> entries;  // exclusive uses, newest last
    std::vector<shared_use> shared;
  };
  void add_exclusive(slot& s, const progress_counter* lane, uint32_t index, uint64_t ts,
                     uint64_t end, bool all, bool race, dep_list& deps);
  slot& find_or_insert(uint64_t key);
  void rebuild(size_t capacity);  // drops finished entries and keys left without any

  std::vector<slot> slots_;
  size_t used_ = 0;
  std::vector<slot> spare_;  // the previous table, reused by the next rebuild of that size
};

}  // namespace fsrr
