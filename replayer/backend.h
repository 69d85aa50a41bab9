// How a replay's events reach the kernel: the one interface replay_job runs them through.
// - local_backend: this process issues every op (engine.h) — inline on the calling thread for
//   a trace of one thread (with a helper thread settling ops ahead where a second CPU is free),
//   else one replay thread per recorded thread, fed in trace order by the dispatcher.
// - the MPI rank's (mpi/mpi_replay.cc): issues its share of the threads, settles the others'
//   ops as their ranks report them (peers.h), and starts when all ranks do.
#pragma once

#include "data_source.h"
#include "engine.h"
#include "report.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

class replay_backend {
 public:
  virtual ~replay_backend() = default;
  // Replays the trace's events on `target`, whose initial tree stands; `options` as the user
  // asked, which the backend may add to.
  virtual replay_stats run(trace_reader& trace, const target_root& target, const data_source& data,
                           engine_options options) = 0;
  // The trace has no events: what run would have done before its first op.
  virtual void run_nothing() {}
};

class local_backend final : public replay_backend {
 public:
  replay_stats run(trace_reader& trace, const target_root& target, const data_source& data,
                   engine_options options) override {
    return replay_events(trace, target, data, options);
  }
};

}  // namespace fsrr
