// What one rank measured, as bytes for MPI to carry to rank 0, and back: the replay's stats
// (CBOR of their fields) merged there into the totals and the per-rank rows of the report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report.h"
#include "result.h"

namespace fsrr::mpi {

// What a rank tells rank 0 after the replay.
struct rank_result {
  int rank = 0;
  std::string host;
  bool idle = false;                     // no recorded thread was its to replay
  int64_t clock_offset_ns = 0;           // its CLOCK_MONOTONIC minus rank 0's
  std::vector<uint16_t> recorded_hosts;  // the trace's hosts whose processes it replays
  uint64_t open_ns = 0;         // reading the trace's header, tables and tree
  uint64_t plan_ns = 0;         // the plan: worked out (rank 0) or received from rank 0
  uint64_t peak_rss_bytes = 0;  // the rank's peak resident memory, at the end
  replay_stats stats;  // its own ops; data flow left out (every rank models all of it)
};

std::vector<uint8_t> to_wire(const rank_result& r);
result<rank_result> from_wire(const std::vector<uint8_t>& bytes);

}  // namespace fsrr::mpi
