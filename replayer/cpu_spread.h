// A timed replay's busy threads on CPUs of their own. The kernel puts a waking thread on an
// idle CPU when it finds one, but it does not move a thread that waits for its CPU to one that
// has gone idle while that thread ran within the last half millisecond (the scheduler's
// migration cost): a replay thread counts as that hot all through a burst of ops. Two replay
// threads woken by one timer interrupt land on one CPU, share it in turns of 3 us and fall
// behind together for a millisecond while the other CPU idles. ftrace of the shell-loop replay
// (short processes, their dynamic loaders' bursts of ops) found its late ops waiting so for
// 14-30% of their lateness.
//
// So a replay thread claims the CPU it runs on while it spins before an op or issues ops
// (cpu_seat::take, from wait_until) and gives the claim up before it sleeps (cpu_seat::leave,
// from the waits that sleep). One that finds its CPU claimed by another moves itself to a CPU
// of the process's no thread claims (sched_setaffinity to it alone, then back to the mask),
// ~26 us here. Threads of other programs are not counted: a CPU they keep busy looks free, and
// a thread moved there competes with them as it would have where it was. A thread that blocks
// in an op keeps its claim.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace fsrr {

class cpu_spread {
 public:
  // The CPUs of the process's affinity mask now; off when `on` is false or it has one.
  explicit cpu_spread(bool on);
  bool on() const { return cpus_ > 1; }
  // The moves the threads made.
  uint64_t moves() const { return moves_.load(std::memory_order_relaxed); }
  // The threads claiming `cpu` (0 for one outside the mask).
  uint32_t claims(int cpu) const;

 private:
  friend class cpu_seat;
  struct alignas(64) slot {
    std::atomic<uint32_t> claims{0};
  };
  cpu_set_t mask_;
  int cpus_ = 0;   // in the mask
  int slots_ = 0;  // the highest CPU in the mask + 1
  std::unique_ptr<slot[]> slot_;
  std::atomic<uint64_t> moves_{0};
};

// The calling thread's place in a spread while this lives (none with nullptr or a spread that
// is off); one per thread at a time. take() and leave() act on the calling thread's seat and
// do nothing in a thread without one: the waits call them whoever waits.
class cpu_seat {
 public:
  explicit cpu_seat(cpu_spread* spread);
  ~cpu_seat();
  cpu_seat(const cpu_seat&) = delete;
  cpu_seat& operator=(const cpu_seat&) = delete;

  // The thread runs, and will: it claims its CPU, and moves if another thread claims it too
  // and some CPU has no claim.
  static void take();
  // The thread is about to sleep: its claim goes.
  static void leave();
  // The CPU the calling thread claims, or -1.
  static int claimed();

 private:
  void take_here();
  void drop();
  cpu_spread* spread_ = nullptr;
  int cpu_ = -1;
  static thread_local cpu_seat* current_;
};

}  // namespace fsrr
