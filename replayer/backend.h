// How a replay's events reach the kernel: the one interface replay_job runs them through.
// - local_backend: this process issues every op, through one of the engine's loops
//   (engine.h's replay_loop): inline on the calling thread for a trace of one thread,
//   settled ahead by a helper thread where a second CPU is free, or in lanes — one replay
//   thread per recorded thread, fed in trace order. for_trace picks the loop; replay_job::run()
//   runs through that backend.
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
  explicit local_backend(replay_loop loop) : loop_(loop) {}
  // The loop this trace replays best through, on this process's CPUs.
  static local_backend for_trace(const trace_reader& trace) {
    return local_backend(choose_loop(trace, engine_options{}));
  }
  replay_loop loop() const { return loop_; }
  replay_stats run(trace_reader& trace, const target_root& target, const data_source& data,
                   engine_options options) override {
    return replay_events(trace, target, data, options, loop_);
  }

 private:
  replay_loop loop_;
};

}  // namespace fsrr
