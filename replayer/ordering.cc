#include "ordering.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace fsrr {
namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

uint64_t hash_key(uint64_t k) {
  k *= 0x9E3779B97F4A7C15ull;
  return k ^ (k >> 31);
}

}  // namespace

void progress_counter::advance(uint32_t n) {
  const uint32_t v = value.fetch_add(n, std::memory_order_seq_cst) + n;
  if (sleepers.load(std::memory_order_seq_cst) == 0) return;
  uint64_t w = wake_at.load(std::memory_order_seq_cst);
  while (!(w & unarmed) && static_cast<int32_t>(v - static_cast<uint32_t>(w)) >= 0) {
    if (wake_at.compare_exchange_weak(w, unarmed, std::memory_order_seq_cst)) {
      ::syscall(SYS_futex, &value, FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
      return;
    }
  }
}

void progress_counter::wait(uint32_t target, const std::atomic<bool>& stop) const {
  // Spin a few microseconds first: the other side usually runs on another CPU right now.
  for (int i = 0; i < 256; ++i) {
    if (reached(target)) return;
    cpu_relax();
  }
  const timespec slice{0, 50'000'000};
  for (;;) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    uint64_t w = wake_at.load(std::memory_order_seq_cst);
    while ((w & unarmed) || static_cast<int32_t>(target - static_cast<uint32_t>(w)) < 0)
      if (wake_at.compare_exchange_weak(w, target, std::memory_order_seq_cst)) break;
    const uint32_t v = value.load(std::memory_order_seq_cst);
    if (static_cast<int32_t>(v - target) >= 0 || stop.load(std::memory_order_relaxed)) {
      sleepers.fetch_sub(1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      return;
    }
    ::syscall(SYS_futex, &value, FUTEX_WAIT_PRIVATE, v, &slice, nullptr, 0);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
}

void dep_list::add(dependency d) {
  for (uint32_t i = 0; i < n_; ++i)
    if (inline_[i].lane == d.lane) {
      if (static_cast<int32_t>(d.count - inline_[i].count) > 0) inline_[i].count = d.count;
      return;
    }
  for (auto& m : more_)
    if (m.lane == d.lane) {
      if (static_cast<int32_t>(d.count - m.count) > 0) m.count = d.count;
      return;
    }
  if (n_ < inline_capacity)
    inline_[n_++] = d;
  else
    more_.push_back(d);
}

void dep_list::wait(const std::atomic<bool>& stop) const {
  for (size_t i = 0; i < size(); ++i) (*this)[i].lane->wait((*this)[i].count, stop);
}

order_tracker::order_tracker() : slots_(1024) {}

order_tracker::slot& order_tracker::find_or_insert(uint64_t key) {
  if (used_ + 1 > slots_.size() / 2 || used_ >= sweep_at_) {
    rebuild(slots_.size());
    if (used_ + 1 > slots_.size() / 4) rebuild(slots_.size() * 2);
    sweep_at_ = std::max<size_t>(4096, used_ * 2);
  }
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash_key(key) & mask;; i = (i + 1) & mask) {
    slot& s = slots_[i];
    if (s.key == key) return s;
    if (s.key == 0) {
      s.key = key;
      ++used_;
      return s;
    }
  }
}

void order_tracker::rebuild(size_t capacity) {
  std::vector<slot> old(capacity);
  old.swap(slots_);
  used_ = 0;
  const size_t mask = slots_.size() - 1;
  for (slot& s : old) {
    if (s.key == 0) continue;
    std::erase_if(s.entries, [](const entry& e) { return e.lane->reached(e.count); });
    if (s.entries.empty()) continue;
    size_t i = hash_key(s.key) & mask;
    while (slots_[i].key != 0) i = (i + 1) & mask;
    slots_[i] = std::move(s);
    ++used_;
  }
}

void order_tracker::add(const progress_counter* lane, uint32_t index, uint64_t ts, uint64_t end,
                        std::span<const uint64_t> keys, dep_list& deps) {
  for (const uint64_t marked : keys) {
    const bool all = marked & order_all;
    auto& v = find_or_insert(marked & ~order_all).entries;
    // Newest first: an ended entry is covered when a newer ended entry started after it ended,
    // because that one already waits for it.
    bool newer_ended = false;
    uint64_t newer_start = 0;
    for (size_t i = v.size(); i-- > 0;) {
      const entry x = v[i];
      const bool ended = x.end <= ts;
      bool drop = x.lane->reached(x.count);
      if (!drop && all) {
        if (x.lane != lane) deps.add({x.lane, x.count});
      } else if (!drop && ended) {
        if (newer_ended && newer_start >= x.end)
          drop = true;
        else if (x.lane != lane)
          deps.add({x.lane, x.count});
      }
      if (ended) {
        newer_start = newer_ended ? std::max(newer_start, x.ts) : x.ts;
        newer_ended = true;
      }
      if (drop) v.erase(v.begin() + static_cast<ptrdiff_t>(i));
    }
    v.push_back({lane, index + 1, ts, end});
  }
}

}  // namespace fsrr
