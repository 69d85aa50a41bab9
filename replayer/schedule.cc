#include "schedule.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "cpu_spread.h"

namespace fsrr {

result<timing_mode> parse_timing(std::string_view text) {
  if (text == "faithful") return timing_mode::faithful;
  if (text == "think") return timing_mode::think;
  if (text == "afap") return timing_mode::afap;
  return failure("--timing '{}': expected faithful, think or afap", text);
}

result<void> check(const schedule_options& o) {
  if (!(o.speed > 0)) return failure("--speed must be greater than 0");
  return {};
}

std::string_view name(timing_mode m) {
  switch (m) {
    case timing_mode::faithful:
      return "faithful";
    case timing_mode::think:
      return "think";
    case timing_mode::afap:
      return "afap";
  }
  return "?";
}

const latency_clock& latency_clock::get() {
  static const latency_clock clock;
  return clock;
}

latency_clock::latency_clock() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {
  }
  if (line.find(" constant_tsc") == std::string::npos ||
      line.find(" nonstop_tsc") == std::string::npos)
    return;
  const uint64_t m0 = monotonic_ns(), c0 = __rdtsc();
  uint64_t m1;
  while ((m1 = monotonic_ns()) < m0 + 2'000'000) {
  }
  const uint64_t c1 = __rdtsc();
  if (c1 <= c0) return;
  tsc_ = true;
  ns_per_tick_ = static_cast<double>(m1 - m0) / static_cast<double>(c1 - c0);
#endif
}

schedule_clock::schedule_clock(const schedule_options& options, uint64_t first_ts)
    : options_(options), first_ts_(first_ts) {
  if (!check(options_)) options_.speed = 1;  // a caller's bug: check() refuses it
}

void schedule_clock::start(uint64_t now_ns) {
  start_ = now_ns;
}

uint64_t schedule_clock::scaled(uint64_t recorded_ns) const {
  if (options_.speed == 1.0) return recorded_ns;
  return static_cast<uint64_t>(static_cast<long double>(recorded_ns) / options_.speed);
}

uint64_t thread_schedule::due(const event& e) const {
  switch (clock_->options().mode) {
    case timing_mode::afap:
      return 0;
    case timing_mode::faithful:
      return clock_->at(e.ts);
    case timing_mode::think:
      if (!any_) return clock_->at(e.ts);
      return replay_end_ + clock_->scaled(e.ts > recorded_end_ ? e.ts - recorded_end_ : 0);
  }
  return 0;
}

void thread_schedule::finished(const event& e, uint64_t end_ns) {
  any_ = true;
  recorded_end_ = e.ts + e.dur;
  replay_end_ = end_ns;
}

result<void> realtime_allowed() {
  const realtime_policy probe(true, realtime_issuer);  // the highest priority a replay asks for
  if (probe.active()) return {};
  return failure("--realtime: this process may not use SCHED_FIFO ({}): it needs root, "
                 "CAP_SYS_NICE or an RLIMIT_RTPRIO of {}, and real-time time in its cgroup",
                 std::strerror(probe.error()), realtime_issuer);
}

thread_policy::thread_policy(bool on, int policy, int priority) {
  if (!on) return;
  sched_param old{};
  policy_ = ::sched_getscheduler(0);
  if (policy_ < 0 || ::sched_getparam(0, &old) != 0) {
    error_ = errno;
    return;
  }
  old_priority_ = old.sched_priority;
  sched_param wanted{};
  wanted.sched_priority = priority;
  if (::sched_setscheduler(0, policy, &wanted) != 0) {
    error_ = errno;
    return;
  }
  set_ = true;
  // What the thread runs as is the kernel's word, not the call's return: read it back.
  sched_param now{};
  const int got = ::sched_getscheduler(0);
  if (got < 0 || ::sched_getparam(0, &now) != 0) {
    error_ = errno;
    return;
  }
  const int mask = ~SCHED_RESET_ON_FORK;
  if ((got & mask) != (policy & mask) || now.sched_priority != priority) {
    error_ = EPERM;
    return;
  }
  confirmed_ = true;
}

thread_policy::~thread_policy() {
  if (!set_) return;
  sched_param old{};
  old.sched_priority = old_priority_;
  ::sched_setscheduler(0, policy_, &old);
}

namespace {

// sched_setattr's argument as Linux 4.13 and later take it (SCHED_ATTR_SIZE_VER1); glibc before
// 2.41 has no wrapper, and <linux/sched/types.h> clashes with <sched.h>.
struct sched_attributes {
  uint32_t size;
  uint32_t policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime;  // an ordinary thread's slice (ns), Linux 6.12 and later
  uint64_t deadline;
  uint64_t period;
  uint32_t util_min;
  uint32_t util_max;
};
static_assert(sizeof(sched_attributes) == 56, "SCHED_ATTR_SIZE_VER1");

constexpr uint64_t reset_on_fork = 0x01;  // SCHED_FLAG_RESET_ON_FORK

bool get_attributes(sched_attributes& a) {
  a = sched_attributes{};
  return ::syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) == 0;
}

bool set_slice(sched_attributes a, uint64_t slice_ns) {
  a.size = sizeof a;
  a.flags &= reset_on_fork;  // the policy and nice as they are, no utilization clamps
  a.runtime = slice_ns;
  return ::syscall(SYS_sched_setattr, 0, &a, 0) == 0;
}

}  // namespace

short_slice::short_slice(bool on, uint64_t slice_ns) {
  sched_attributes a;
  // A kernel that reports no slice (before 6.12) keeps none either.
  if (!on || !get_attributes(a) || a.policy != SCHED_OTHER || a.runtime == 0) return;
  old_ns_ = a.runtime;
  if (!set_slice(a, slice_ns)) return;
  set_ = true;
  active_ = get_attributes(a) && a.policy == SCHED_OTHER && a.runtime == slice_ns;
}

short_slice::~short_slice() {
  sched_attributes a;
  if (!set_ || !get_attributes(a) || a.policy != SCHED_OTHER) return;
  // A slice of 0 is the kernel's default, which follows its base slice; set as a number, the
  // same value would stay fixed. So the default first, and the old value if that was not it.
  if (set_slice(a, 0) && get_attributes(a) && a.runtime != old_ns_) set_slice(a, old_ns_);
}

void default_slice() {
  sched_attributes a;
  if (get_attributes(a) && (a.policy == SCHED_OTHER || a.policy == SCHED_BATCH) && a.runtime)
    set_slice(a, 0);
}

uint64_t wait_until(uint64_t due_ns, uint64_t spin_ns, const std::atomic<bool>& stop,
                    uint64_t short_spin_ns, bool yield) {
  constexpr uint64_t slice_ns = 50'000'000;
  uint64_t now = monotonic_ns();
  if (due_ns > now && due_ns - now <= short_wait_ns) spin_ns = std::min(spin_ns, short_spin_ns);
  if (now + spin_ns < due_ns) cpu_seat::leave();
  while (now + spin_ns < due_ns && !stop.load(std::memory_order_relaxed)) {
    const uint64_t wake = std::min(due_ns - spin_ns, now + slice_ns);
    const timespec t{static_cast<time_t>(wake / 1'000'000'000ull),
                     static_cast<long>(wake % 1'000'000'000ull)};
    ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr);
    now = monotonic_ns();
  }
  // The spin gives the CPU away to any thread that can run: on 2 CPUs a replay's threads
  // outnumber them, and an op that is due waits behind a spinning thread for the scheduler's
  // next tick (milliseconds). With nothing else to run, sched_yield returns at once. But each
  // yield puts an ordinary thread's deadline a slice later: a lone thread with a 100 us slice
  // that spun 100 us yielding was 2.1 ms late at p50 beside two CPU-bound loops, and 17 us
  // at p99 spinning without yielding. A thread that is alone in its replay does not yield.
  // A thread with a seat (cpu_spread.h) claims its CPU from here, and checks it again as it
  // spins: another may come to spin there too.
  cpu_seat::take();
  while (now < due_ns && !stop.load(std::memory_order_relaxed)) {
    if (yield) ::sched_yield();
    cpu_seat::take();
    now = monotonic_ns();
  }
  return now;
}

}  // namespace fsrr
