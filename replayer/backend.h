// How a replay's events reach the kernel: the one interface replay_job runs them through.
// - local_backend: this process issues every op, through one of the engine's loops
//   (engine.h's replay_loop): inline on the calling thread for a trace of one thread,
//   settled ahead by a helper thread where a second CPU is free, or in lanes — one replay
//   thread per recorded thread, fed in trace order. replay_job::run() runs through it, the loop
//   chosen for the trace and the options (choose_loop).
// - the MPI rank's (mpi/mpi_replay.cc): issues its share of the threads, settles the others'
//   ops as their ranks report them (peers.h), and starts when all ranks do.
#pragma once

#include <optional>

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
  // Through `loop`, or the one the trace replays best through with the options run is given
  // on this process's CPUs (choose_loop).
  explicit local_backend(std::optional<replay_loop> loop = std::nullopt) : loop_(loop) {}
  replay_stats run(trace_reader& trace, const target_root& target, const data_source& data,
                   engine_options options) override {
    return replay_events(trace, target, data, options,
                         loop_ ? *loop_ : choose_loop(trace, options));
  }

 private:
  std::optional<replay_loop> loop_;
};

}  // namespace fsrr
