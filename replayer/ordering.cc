#include "ordering.h"

#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "cpu_spread.h"
#include "schedule.h"

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

void progress_counter::wait(uint32_t target, const std::atomic<bool>& stop,
                            uint64_t spin_ns) const {
  // Spin first: the other side usually runs on another CPU right now.
  for (int i = 0; i < 256; ++i) {
    if (reached(target)) return;
    cpu_relax();
  }
  if (spin_ns) {
    const uint64_t until = monotonic_ns() + spin_ns;
    do {
      for (int i = 0; i < 64; ++i) {
        if (reached(target)) return;
        cpu_relax();
      }
      ::sched_yield();  // the thread waited for may be the one this CPU would run next
    } while (monotonic_ns() < until && !stop.load(std::memory_order_relaxed));
  }
  const timespec slice{0, 50'000'000};
  cpu_seat::leave();  // asleep, it does not hold a CPU
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

bool dep_list::reached() const {
  for (size_t i = 0; i < size(); ++i)
    if (!(*this)[i].lane->reached((*this)[i].count)) return false;
  return true;
}

bool dep_list::waits_remote() const {
  for (size_t i = 0; i < size(); ++i)
    if ((*this)[i].lane->remote && !(*this)[i].lane->reached((*this)[i].count)) return true;
  return false;
}

void dep_list::wait(const std::atomic<bool>& stop, uint64_t spin_ns) const {
  for (size_t i = 0; i < size(); ++i) (*this)[i].lane->wait((*this)[i].count, stop, spin_ns);
}

order_tracker::order_tracker() : slots_(1024) {}

order_tracker::slot& order_tracker::find_or_insert(uint64_t key) {
  // Swept when half full (most keys are finished by then), so a sweep's cost is spread over
  // as many new keys as the table holds; grown when the sweep leaves it a quarter full.
  if (used_ + 1 > slots_.size() / 2) {
    rebuild(slots_.size());
    if (used_ + 1 > slots_.size() / 4) rebuild(slots_.size() * 2);
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
  // The entry vectors keep their memory from one table to the next.
  if (spare_.size() != capacity) spare_ = std::vector<slot>(capacity);
  for (slot& s : spare_) s.key = 0;
  used_ = 0;
  const size_t mask = capacity - 1;
  for (slot& s : slots_) {
    if (s.key == 0) continue;
    std::erase_if(s.entries, [](const entry& e) { return e.lane->reached(e.count); });
    std::erase_if(s.shared, [](const shared_use& u) { return u.lane->reached(u.count); });
    if (!s.entries.empty() || !s.shared.empty()) {
      size_t i = hash_key(s.key) & mask;
      while (spare_[i].key != 0) i = (i + 1) & mask;
      spare_[i].key = s.key;
      spare_[i].entries.swap(s.entries);
      spare_[i].shared.swap(s.shared);
      ++used_;
    }
    s.entries.clear();
    s.shared.clear();
  }
  slots_.swap(spare_);
}

void order_tracker::add(const progress_counter* lane, uint32_t index, uint64_t ts, uint64_t end,
                        std::span<const uint64_t> keys, dep_list& deps) {
  for (const uint64_t marked : keys) {
    slot& s = find_or_insert(marked & ~order_marks);
    if (!(marked & order_shared)) {
      add_exclusive(s, lane, index, ts, end, marked & order_all, marked & order_race, deps);
      continue;
    }
    // Shared: waits for the exclusive uses that ended before it, as an exclusive use would.
    auto& v = s.entries;
    for (size_t i = v.size(); i-- > 0;) {
      const entry x = v[i];
      if (x.lane->reached(x.count)) {
        v.erase(v.begin() + static_cast<ptrdiff_t>(i));
      } else if (x.end <= ts && x.lane != lane) {
        deps.add({x.lane, x.count});
      }
    }
    auto u = std::find_if(s.shared.begin(), s.shared.end(),
                          [&](const shared_use& x) { return x.lane == lane; });
    if (u == s.shared.end())
      s.shared.push_back({lane, index + 1, 0, end});
    else
      *u = {lane, index + 1, u->lane->reached(u->count) ? 0 : u->count, end};
  }
}

void order_tracker::add_exclusive(slot& s, const progress_counter* lane, uint32_t index,
                                  uint64_t ts, uint64_t end, bool all, bool race,
                                  dep_list& deps) {
  auto& v = s.entries;
  // Newest first: an ended entry is covered when a newer ended entry started after it ended,
  // because that one already waits for it.
  bool newer_ended = false;
  uint64_t newer_start = 0;
  for (size_t i = v.size(); i-- > 0;) {
    const entry x = v[i];
    const bool ended = x.end <= ts;
    bool drop = x.lane->reached(x.count);
    if (!drop && (all || race)) {
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
  // The shared uses: each lane's latest that ended before this op. One that ended before a
  // newer ended exclusive use started is covered by it, as above.
  std::erase_if(s.shared, [&](const shared_use& u) {
    if (u.lane->reached(u.count)) return true;
    if (!all && newer_ended && newer_start >= u.end) return true;
    if (u.lane == lane) return false;
    if (all || u.end <= ts)
      deps.add({u.lane, u.count});
    else if (u.earlier)
      deps.add({u.lane, u.earlier});
    return false;
  });
  v.push_back({lane, index + 1, ts, end});
}

}  // namespace fsrr
