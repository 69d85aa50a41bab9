// When each replayed op is issued. `faithful`: at its recorded offset from the trace start,
// every target computed from the one start instant, so a late op never shifts the ones after
// it; `think`: each thread keeps its recorded gap between one op's end and its next op's start;
// `afap`: no waiting. `--speed X` divides recorded time by X. Waiting sleeps until shortly
// before the target, then spins, because a sleeping thread wakes tens of microseconds late.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <string_view>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "clock.h"
#include "event.h"
#include "result.h"

namespace fsrr {

enum class timing_mode : uint8_t { faithful, think, afap };

// "faithful" | "think" | "afap", or why not.
result<timing_mode> parse_timing(std::string_view text);
std::string_view name(timing_mode m);

struct schedule_options {
  timing_mode mode = timing_mode::faithful;
  double speed = 1.0;          // > 0
  uint64_t spin_ns = 100'000;  // spin instead of sleeping for the last part of a wait
};
// Refuses a speed that is not above 0.
result<void> check(const schedule_options& o);

// Op latencies: the CPU's cycle counter where it ticks at a constant rate (read in about half
// the time of clock_gettime, which counts at a few hundred thousand ops a second), converted
// with a factor calibrated once against CLOCK_MONOTONIC; CLOCK_MONOTONIC elsewhere. Read twice
// per replayed op, so the reads are inline.
class latency_clock {
 public:
  // The process's clock; the first call calibrates it (a few ms).
  static const latency_clock& get();
  uint64_t now() const {
#if defined(__x86_64__)
    if (tsc_) return __rdtsc();
#endif
    return monotonic_ns();
  }
  uint64_t to_ns(uint64_t ticks) const {
    return tsc_ ? static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick_) : ticks;
  }

 private:
  latency_clock();
  bool tsc_ = false;
  double ns_per_tick_ = 1.0;
};

// The one clock all replay threads schedule from.
class schedule_clock {
 public:
  // `first_ts`: the recorded entry time that maps to the replay's start.
  schedule_clock(const schedule_options& options, uint64_t first_ts);
  void start(uint64_t now_ns);
  uint64_t start_ns() const { return start_; }
  const schedule_options& options() const { return options_; }
  bool timed() const { return options_.mode != timing_mode::afap; }
  // Recorded ns scaled by speed.
  uint64_t scaled(uint64_t recorded_ns) const;
  // Faithful target of an op recorded at `ts` (monotonic ns).
  uint64_t at(uint64_t ts) const { return start_ + scaled(ts > first_ts_ ? ts - first_ts_ : 0); }

 private:
  schedule_options options_;
  uint64_t first_ts_;
  uint64_t start_ = 0;
};

inline constexpr uint64_t short_wait_ns = 1'000'000;
// What a real-time replay thread spins before an op at most short_wait_ns away. Woken from a
// short sleep, a SCHED_FIFO thread is on its CPU within ~25 us (p99 ~45 us here: the idle
// CPU is still polling, as a KVM guest's haltpoll does for up to 200 us, and nothing ordinary
// can hold it off); from a sleep of milliseconds it needs the whole spin. A busy trace's every
// gap is short, and spinning each of them whole ran the replay's threads into the kernel's
// budget for real-time threads (95% of each second), which then stopped them all for
// milliseconds. An ordinary thread keeps the whole spin: woken, it may wait behind another.
inline constexpr uint64_t realtime_short_spin_ns = 20'000;

// One replay thread's pacing.
class thread_schedule {
 public:
  // `realtime`: the thread runs SCHED_FIFO (its short waits spin less). `alone`: the replay's
  // only thread that issues ops, which has no other replay thread to give the CPU to.
  explicit thread_schedule(const schedule_clock& clock, bool realtime = false, bool alone = false)
      : clock_(&clock), realtime_(realtime), alone_(alone) {}
  // wait_until's short_spin_ns for this thread.
  uint64_t short_spin_ns() const { return realtime_ ? realtime_short_spin_ns : UINT64_MAX; }
  // wait_until's `yield` for this thread.
  bool yields() const { return !alone_; }
  // When the op may be issued (monotonic ns); 0: at once.
  uint64_t due(const event& e) const;
  // The op ended at `end_ns` in the replay (think mode measures the next gap from there).
  void finished(const event& e, uint64_t end_ns);
  // How late a replayer that cost nothing would have issued an op due at `due_ns` that took
  // `took_ns`: at its due time, or when the thread's previous op returned if that was later.
  // Where a busy thread's ops take longer on the target than in the recording, they fall
  // behind whatever the replayer does; this is that part of the lateness. Call once per issued
  // op, in order.
  uint64_t op_bound(uint64_t due_ns, uint64_t took_ns) {
    const uint64_t at = due_ns > bound_free_ ? due_ns : bound_free_;
    bound_free_ = at + took_ns;
    return at - due_ns;
  }

 private:
  const schedule_clock* clock_;
  bool realtime_ = false;
  bool alone_ = false;
  bool any_ = false;
  uint64_t recorded_end_ = 0;  // of the thread's previous op
  uint64_t replay_end_ = 0;
  uint64_t bound_free_ = 0;  // op_bound: when the thread's previous op would have returned
};

// The real-time priorities of a replay's threads (SCHED_FIFO, below threaded interrupt
// handlers at 50, above every ordinary thread, kernel workers included): the threads that
// issue ops above the one that hands ops to them.
inline constexpr int realtime_issuer = 2, realtime_dispatcher = 1;

// Whether this process may run threads SCHED_FIFO (root, CAP_SYS_NICE or an RLIMIT_RTPRIO,
// and a cgroup with real-time time to give): tried on the calling thread, then undone.
result<void> realtime_allowed();

// The calling thread runs `policy` at `priority` while this lives (when `on`, and allowed),
// then goes back to its own. Set with sched_setscheduler on the thread as the kernel keeps it
// (glibc's pthread_setschedparam keeps a copy of its own that new threads would be given).
class thread_policy {
 public:
  thread_policy(bool on, int policy, int priority);
  ~thread_policy();
  thread_policy(const thread_policy&) = delete;
  thread_policy& operator=(const thread_policy&) = delete;
  // The kernel reports the thread at that policy and priority.
  bool active() const { return confirmed_; }
  int error() const { return error_; }  // why it is not active: an errno value, or 0

 private:
  int policy_ = 0;
  int error_ = 0;
  int old_priority_ = 0;
  bool set_ = false;  // changed: the destructor puts the old policy back
  bool confirmed_ = false;
};

// SCHED_FIFO at `priority`; threads it starts meanwhile start as ordinary ones: a replay
// thread raises itself, a block loader must not take a CPU from one.
struct realtime_policy : thread_policy {
  realtime_policy(bool on, int priority)
      : thread_policy(on, SCHED_FIFO | SCHED_RESET_ON_FORK, priority) {}
};

// The scheduler slice an ordinary replay thread asks for in timed modes: the least Linux
// grants (6.12 and later: sched_setattr's sched_runtime for a SCHED_OTHER thread, no
// privilege needed). A thread woken with a shorter slice than the running one's preempts it
// rather than waiting for that slice to end (1.4 ms here by default: 0.7 ms x (1 + log2 of
// the CPUs) on Linux 6.18). It changes when a thread runs, not how much: each keeps its fair
// share. Beside two CPU-bound loops on 2 cores the shell loop's p99 lateness went from 59-71
// ms to 6-10 ms.
inline constexpr uint64_t replay_slice_ns = 100'000;

// The calling thread, an ordinary (SCHED_OTHER) one, runs with a `slice_ns` scheduler slice
// while this lives (when `on`), then goes back to its own. Threads it starts meanwhile start
// with it. A kernel before 6.12 ignores the request: active() then says no.
class short_slice {
 public:
  explicit short_slice(bool on, uint64_t slice_ns = replay_slice_ns);
  ~short_slice();
  short_slice(const short_slice&) = delete;
  short_slice& operator=(const short_slice&) = delete;
  // The kernel reports the thread at that slice.
  bool active() const { return active_; }

 private:
  uint64_t old_ns_ = 0;
  bool set_ = false;  // changed: the destructor puts the old slice back
  bool active_ = false;
};

// The calling thread, an ordinary or SCHED_BATCH one, back at the kernel's default slice: a
// helper started by a thread with a short slice, which a woken replay thread should preempt.
void default_slice();

// Sleeps, then spins `spin_ns`, until monotonic_ns() >= due_ns or `stop` is set; returns the
// time it returned at. Long sleeps are cut in slices so `stop` is noticed within 50 ms. A wait
// of at most short_wait_ns spins at most `short_spin_ns`.
uint64_t wait_until(uint64_t due_ns, uint64_t spin_ns, const std::atomic<bool>& stop,
                    uint64_t short_spin_ns = UINT64_MAX, bool yield = true);

}  // namespace fsrr
