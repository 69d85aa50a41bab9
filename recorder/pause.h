// Backpressure, user side: the programs stop a process that finds the ring buffer filling up
// (pause_if_full in fsrr.bpf.c) and list it in the `paused` map; this continues it once the
// drain has caught up, and accounts for the time the workload spent waiting.
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
  pause_keeper(int paused_map, uint64_t resume_below, std::function<void(pid_t)> hold_root);
  ~pause_keeper();  // continues whatever is still stopped: never leave the workload stopped

  // On the drain thread, after each pass, with the bytes still in the ring.
  void after_pass(uint64_t pending);
  void resume_all();

  pause_stats stats() const;

 private:
  void resume_locked(uint64_t now, bool drained);

  int map_;
  uint64_t resume_below_;
  std::function<void(pid_t)> hold_root_;
  mutable std::mutex mu_;
  pause_stats stats_;
};

}  // namespace fsrr::recorder
