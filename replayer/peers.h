// A replay shared by several processes (the MPI ranks of mpi/): each issues the ops of its own
// recorded threads and settles every event of the trace in the same order, so its fd tables,
// data flow and cross-thread ordering are the whole trace's. The threads another process issues
// are remote lanes: ops here that depend on one of theirs wait on a progress counter that this
// process's link to the others advances when the owner says its lane got that far.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "event.h"
#include "ordering.h"

namespace fsrr {

struct replay_shared;

class replay_peers {
 public:
  virtual ~replay_peers() = default;
  // This process issues the ops of recorded thread t.
  virtual bool issues(thread_id t) const = 0;
  // Ops of remote thread t finished at its owner, as far as the owner has said.
  virtual progress_counter& remote_progress(thread_id t) = 0;
  // The other processes (bit r % 64 for rank r) whose threads touch one of these ordering keys
  // (ordering.h): they must hear when a local op on them is done. 0: none.
  virtual uint64_t watchers(std::span<const uint64_t> keys) const = 0;
  // A remote op's key that a local thread touches too: only those go into the ordering here.
  virtual bool touched_here(uint64_t key) const = 0;
  // From a replay thread: local thread t's lane has finished `count` ops (its queue numbering,
  // end marks included), the last of them on keys `watchers` wait for.
  virtual void finished(thread_id t, uint32_t count, uint64_t watchers) = 0;
  // The CLOCK_MONOTONIC instant all the processes start their replays at, agreed with the
  // others: called once, on the calling thread, before the first op (and before begin), even
  // by a process with nothing to replay. The engine waits for it.
  virtual uint64_t start_instant() = 0;
  // The replay begins (`shared` may be stopped from elsewhere: a failing peer) and ends here.
  virtual void begin(replay_shared& shared) = 0;
  virtual void end() = 0;
};

}  // namespace fsrr
