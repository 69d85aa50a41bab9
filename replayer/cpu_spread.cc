#include "cpu_spread.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "clock.h"

namespace fsrr {

thread_local cpu_seat* cpu_seat::current_ = nullptr;

cpu_spread::cpu_spread(bool on, const char* loadavg) {
  CPU_ZERO(&mask_);
  if (!on || ::sched_getaffinity(0, sizeof mask_, &mask_) != 0) return;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask_)) {
      ++cpus_;
      slots_ = c + 1;
    }
  if (cpus_ < 2) {
    cpus_ = 0;
    return;
  }
  slot_ = std::make_unique<slot[]>(static_cast<size_t>(slots_));
  loadavg_ = ::open(loadavg, O_RDONLY | O_CLOEXEC);
  // The kernel's own count only: lxcfs's (FUSE) is a container's, refreshed every 5 s, and
  // each read a round trip to its daemon; gVisor's is zeros.
  struct statfs fs;
  if (loadavg_ >= 0 && std::strncmp(loadavg, "/proc/", 6) == 0 &&
      (::fstatfs(loadavg_, &fs) != 0 || fs.f_type != PROC_SUPER_MAGIC)) {
    ::close(loadavg_);
    loadavg_ = -1;
  }
  outside_ = std::max(0, ::get_nprocs() - cpus_);
}

cpu_spread::~cpu_spread() {
  if (loadavg_ >= 0) ::close(loadavg_);
}

int cpu_spread::running() const {
  // "0.52 0.58 0.59 3/467 12345": the fourth field's numerator, counted anew at each read
  char text[128];
  const ssize_t n = loadavg_ >= 0 ? ::pread(loadavg_, text, sizeof text - 1, 0) : -1;
  if (n <= 0) return -1;
  text[n] = 0;
  const char* p = text;
  for (int field = 0; field < 3 && p; ++field) {
    p = std::strchr(p, ' ');
    if (p) ++p;
  }
  if (!p || *p < '0' || *p > '9') return -1;
  char* end = nullptr;
  const long r = std::strtol(p, &end, 10);
  return end && *end == '/' && r >= 0 && r <= INT_MAX ? static_cast<int>(r) : -1;
}

uint32_t cpu_spread::claims(int cpu) const {
  if (!on() || cpu < 0 || cpu >= slots_) return 0;
  return slot_[cpu].claims.load(std::memory_order_relaxed);
}

cpu_seat::cpu_seat(cpu_spread* spread, bool moves) : moves_(moves) {
  if (!spread || !spread->on() || current_) return;
  CPU_ZERO(&own_);
  if (::sched_getaffinity(0, sizeof own_, &own_) != 0) return;
  spread_ = spread;
  current_ = this;
  if (moves) spread->seated_.fetch_add(1, std::memory_order_relaxed);
}

cpu_seat::~cpu_seat() {
  if (!spread_) return;
  drop();
  current_ = nullptr;
}

void cpu_seat::take() {
  if (current_) current_->take_here();
}

void cpu_seat::leave() {
  if (current_) current_->drop();
}

int cpu_seat::claimed() {
  return current_ ? current_->cpu_ : -1;
}

void cpu_seat::drop() {
  if (cpu_ < 0) return;
  spread_->slot_[cpu_].claims.fetch_sub(1, std::memory_order_relaxed);
  cpu_ = -1;
}

void cpu_seat::take_here() {
  cpu_spread& s = *spread_;
  const int cpu = ::sched_getcpu();  // the rseq area's word: a few ns
  if (cpu != cpu_) {
    drop();
    if (cpu < 0 || cpu >= s.slots_ || !CPU_ISSET(cpu, &s.mask_)) return;  // moved by someone
    s.slot_[cpu].claims.fetch_add(1, std::memory_order_relaxed);
    cpu_ = cpu;
  }
  if (!moves_ || s.slot_[cpu].claims.load(std::memory_order_relaxed) < 2) return;
  // Shared. But moved to a CPU that runs another program's thread, it would wait behind that
  // one instead of behind a replay thread that yields to it.
  int claimed = 0, unclaimed = 0;
  for (int c = 0; c < s.slots_; ++c) {
    if (!CPU_ISSET(c, &s.mask_)) continue;
    const uint32_t k = s.slot_[c].claims.load(std::memory_order_relaxed);
    claimed += static_cast<int>(k);
    unclaimed += k == 0 && CPU_ISSET(c, &own_);
  }
  if (unclaimed == 0) return;  // nowhere to go: looked at again at once, with no system call
  const uint64_t now = monotonic_ns();
  if (now < look_after_) return;
  // The machine's count; the CPUs outside the mask may run as many threads of others.
  if (const int running = s.running(); running >= 0) {
    const int others = running - claimed - s.outside_;
    if (others >= unclaimed) {
      look_after_ = now + 200'000;
      return;
    }
  }
  // The first free CPU after this one (threads that move at once spread out), claimed
  // before the move so that no other thread picks it too. Read before the exchange, which
  // would take every slot's cache line from the threads that spin on it.
  for (int i = 1; i < s.slots_; ++i) {
    if (s.slot_[cpu].claims.load(std::memory_order_relaxed) < 2) return;  // the other moved
    const int to = (cpu + i) % s.slots_;
    if (!CPU_ISSET(to, &s.mask_) || !CPU_ISSET(to, &own_)) continue;
    uint32_t none = 0;
    if (s.slot_[to].claims.load(std::memory_order_relaxed) != 0 ||
        !s.slot_[to].claims.compare_exchange_strong(none, 1, std::memory_order_relaxed))
      continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(to, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) {  // offline, or a cpuset without it
      s.slot_[to].claims.fetch_sub(1, std::memory_order_relaxed);
      moves_ = false;  // tried again on every spin, it would cost a system call each time
      return;
    }
    // Free again, it stays where it is; should that fail, it is bound there and moves no more.
    if (::sched_setaffinity(0, sizeof own_, &own_) != 0) moves_ = false;
    drop();
    cpu_ = to;
    s.moves_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
}

}  // namespace fsrr
