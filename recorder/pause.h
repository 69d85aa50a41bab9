// Backpressure, user side: the programs stop a process that finds the ring buffer filling up
// (pause_if_full in fsrr.bpf.c) and list it in the `paused` map; this continues it once the
// drain has caught up, and accounts for the time the workload spent waiting. A guard process
// continues whatever is still listed if fsrr dies without doing so (kill -9, OOM).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <mutex>

namespace fsrr::recorder {

struct pause_stats {
  uint64_t episodes = 0;  // times stopped processes were continued
  uint64_t paused_ns = 0; // wall time during which some process was stopped, summed
};

class pause_keeper {
 public:
  // `paused_map`: the programs' `paused` map. Processes that wait for the ring are continued
  // once fewer than `resume_below` bytes are left in it; those that wait for their root once
  // `hold_root(tgid)` has returned.
  // `added()`: how many entries the programs have added to the map so far (passes skip the
  // map, whose scan costs a walk of all its buckets, while that number stays).
  pause_keeper(int paused_map, uint64_t resume_below, std::function<void(pid_t)> hold_root,
               std::function<uint64_t()> added);
  ~pause_keeper();  // continues whatever is still stopped: never leave the workload stopped
  pause_keeper(const pause_keeper&) = delete;
  pause_keeper& operator=(const pause_keeper&) = delete;

  // On the drain thread, after each pass, with the bytes still in the ring.
  void after_pass(uint64_t pending);
  void resume_all();

  pause_stats stats() const;

 private:
  // Returns whether entries were left.
  bool resume_locked(uint64_t now, bool drained);

  int map_;
  uint64_t resume_below_;
  std::function<void(pid_t)> hold_root_;
  std::function<uint64_t()> added_;
  uint64_t added_when_empty_ = 0;  // added_() when a scan last left the map empty
  bool maybe_full_ = false;        // a scan left entries in the map
  mutable std::mutex mu_;
  pause_stats stats_;
  pid_t guard_ = -1;       // the guard process
  int guard_pipe_ = -1;    // its lifeline: it wakes when this is closed, however fsrr ends
};

}  // namespace fsrr::recorder
