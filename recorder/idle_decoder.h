// The decoder's claim on the CPU. While it keeps up, fsrr's user-side work (decoding, the
// initial tree's lookups, compressing blocks) runs as SCHED_IDLE: on a CPU that runs only
// idle-policy threads, a woken thread of the workload is placed and run at once, as on an idle
// CPU, instead of waiting for the decoder's slice to end. A copy whose processes wake each
// other all the time (rsync -aAHX) runs that much faster under fsrr. Once the decoder falls
// behind or misses its beat, another thread (the drain, or its watchdog) raises it back to
// SCHED_OTHER until it has caught up, so that a machine whose CPUs are all busy cannot starve
// it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace fsrr::recorder {

class idle_decoder {
 public:
  explicit idle_decoder(bool on) : on_(on) {}

  // On the decoder thread (always the same one). enter() makes the thread SCHED_IDLE if it
  // runs SCHED_OTHER and may come back from it (CAP_SYS_NICE, or an RLIMIT_NICE that allows
  // its nice value): the first call decides, for good. Returns whether the thread is idle now.
  // leave() brings it back unless raise() did already.
  bool enter();
  void leave();

  // From any other thread: the decoder back to SCHED_OTHER if it is idle. Returns whether it
  // was.
  bool raise();

  bool on() const { return on_; }
  bool idle() const { return idle_.load(std::memory_order_relaxed); }
  // The decoder's heartbeat, which another thread watches (drain.h).
  void beat(uint64_t now_ns) { beat_.store(now_ns, std::memory_order_relaxed); }
  uint64_t last_beat() const { return beat_.load(std::memory_order_relaxed); }
  uint64_t entered() const { return entered_.load(std::memory_order_relaxed); }
  uint64_t raised() const { return raised_.load(std::memory_order_relaxed); }

 private:
  const bool on_;
  int usable_ = -1;        // decided by the first enter(): 1 yes, 0 no
  int reset_on_fork_ = 0;  // SCHED_RESET_ON_FORK, kept as the thread had it
  pid_t tid_ = 0;
  // Set before the thread becomes idle and cleared once it is back, or by raise(): whenever
  // the thread is SCHED_IDLE, it is set or a call that brings it back is on its way.
  std::atomic<bool> idle_{false};
  std::atomic<uint64_t> beat_{0}, entered_{0}, raised_{0};
};

// May the calling thread, once SCHED_IDLE, return to SCHED_OTHER at its nice value? With
// CAP_SYS_NICE, or where nice_limit_allows says so.
bool may_leave_idle();
// Whether an RLIMIT_NICE of `limit` lets a thread without CAP_SYS_NICE have nice value `nice`:
// 20 - nice <= limit.
bool nice_limit_allows(int nice, uint64_t limit);

}  // namespace fsrr::recorder
