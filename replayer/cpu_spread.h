// A timed replay's busy threads on CPUs of their own. The kernel puts a waking thread on an
// idle CPU when it finds one, but its balancer leaves a thread that waits for its CPU where it
// is, though a CPU of another core has gone idle, while that thread ran within the last half
// millisecond (cache-hot: the default migration cost), until balancing has failed a few times;
// a replay thread in a burst of ops has always just run. Two replay threads woken by one timer
// interrupt land on one CPU, share it in turns of 2-20 us and fall behind together for a
// millisecond while the other CPU idles. ftrace of the shell-loop replay (short processes,
// their dynamic loaders' bursts of ops) found its chains of late ops waiting so for 14-30% of
// the time they lasted.
//
// So a replay thread claims the CPU it runs on while it spins before an op or issues ops after
// one (cpu_seat::take, from wait_until and after a wait for another thread's op) and gives the
// claim up before it sleeps (cpu_seat::leave, from the waits that sleep). One that finds its
// CPU claimed by another moves itself to a CPU of its affinity mask that no thread claims
// (sched_setaffinity to that CPU alone, then back to its mask), ~26 us here. Only if a free CPU
// is likely idle: the threads the machine runs or has waiting (the kernel's /proc/loadavg,
// fourth field, counted as it is read; one CPU's worth for each online CPU outside the mask)
// beyond the claimed ones are fewer than the free CPUs. Beside two busy loops on 2 CPUs every
// move went to a loop's CPU, where the thread waited behind the loop rather than behind a
// replay thread that yields to it; the shell loop's p99 went from 7.9 to 8.9 ms. A move not
// made for that is looked at again 200 us later. A thread blocked in an op keeps its claim
// and is not in the count, so it hides one other thread.
// The thread that hands the replay threads their ops claims the CPU it runs on at each op it
// hands out and gives it up where it waits, and does not move (a seat that does not move):
// the replay threads move off it as off one another, and it is not taken for another
// program's thread (shell loop, 9 interleaved rounds: p99 median 86 us without its claim, 78
// us with it, ranges 65-152 and 56-106 us).
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace fsrr {

class cpu_spread {
 public:
  // Over the calling thread's affinity mask now (the replay threads it starts inherit it); off
  // when `on` is false or the mask has one CPU. `loadavg`: where the running threads are
  // counted (a test's file); unreadable, every free CPU counts as idle.
  explicit cpu_spread(bool on, const char* loadavg = "/proc/loadavg");
  ~cpu_spread();
  cpu_spread(const cpu_spread&) = delete;
  cpu_spread& operator=(const cpu_spread&) = delete;
  bool on() const { return cpus_ > 1; }
  // The threads that took a seat, and the moves they made.
  uint32_t seated() const { return seated_.load(std::memory_order_relaxed); }
  uint64_t moves() const { return moves_.load(std::memory_order_relaxed); }
  // The threads claiming `cpu` (0 for one outside the mask).
  uint32_t claims(int cpu) const;
  // The threads the machine runs or has waiting for a CPU, or -1.
  int running() const;

 private:
  friend class cpu_seat;
  struct alignas(64) slot {
    std::atomic<uint32_t> claims{0};
  };
  cpu_set_t mask_;
  int cpus_ = 0;   // in the mask
  int slots_ = 0;  // the highest CPU in the mask + 1
  std::unique_ptr<slot[]> slot_;
  int loadavg_ = -1;
  int outside_ = 0;  // online CPUs outside the mask
  std::atomic<uint32_t> seated_{0};
  std::atomic<uint64_t> moves_{0};
};

// The calling thread's place in a spread while this lives (none with nullptr or a spread that
// is off); one per thread at a time. take() and leave() act on the calling thread's seat and
// do nothing in a thread without one: the waits call them whoever waits.
class cpu_seat {
 public:
  // `moves` false: the thread claims the CPU it runs on, for the others to see, and stays.
  explicit cpu_seat(cpu_spread* spread, bool moves = true);
  ~cpu_seat();
  cpu_seat(const cpu_seat&) = delete;
  cpu_seat& operator=(const cpu_seat&) = delete;

  // The thread runs, and will: it claims its CPU, and moves if another thread claims it too
  // and a CPU of its mask has no claim.
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
  bool moves_ = true;        // until a move fails: a CPU gone, a policy that forbids it
  uint64_t look_after_ = 0;  // a move not made is not looked at again before (monotonic ns)
  cpu_set_t own_;            // the thread's mask, which a move restores
  static thread_local cpu_seat* current_;
};

}  // namespace fsrr
