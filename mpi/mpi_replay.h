// `mpirun -n N fsrr replay --mpi FILE TARGET ...`: the replay spread over MPI ranks. Every
// rank reads the whole trace and works out the same plan (rank_plan.h); rank 0 builds the
// initial tree while the others wait; the ranks agree on one start instant (clock offsets to
// rank 0 by ping-pong); each replays its share with the engine, ordered across ranks through
// rank_link.h; rank 0 gathers what each measured and writes the one report.
#pragma once

#include <string>

#include "replay.h"

namespace fsrr::mpi {

// Runs the whole job on this rank (MPI_Init to MPI_Finalize) and returns its exit status.
// Rank 0 prints the summary and writes `report` (if not empty). When a rank failed, every rank
// fails: rank 0 says "fsrr: rank N: cause" on stderr before any rank returns, and every rank
// returns told_elsewhere() (result.h).
result<int> replay(const std::string& trace_path, replay_options options,
                   const std::string& report);

}  // namespace fsrr::mpi
