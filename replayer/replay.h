// replay: the whole job behind `fsrr replay` — confine to the target, build the initial tree,
// re-issue the recorded events, and produce the report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data_source.h"
#include "prepare.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

struct replay_options {
  std::string target;
  std::vector<map_rule> maps;
  data_spec data;
  std::string timing = "faithful";  // faithful | think | afap
  double speed = 1.0;
  bool force = false;     // replay into a non-empty target
  bool strict = false;    // stop at the first mismatch
  bool progress = false;  // a progress line on stderr
};

struct replay_outcome {
  prepare_result prepare;
  uint64_t wall_ns = 0;
  uint64_t events = 0;           // events replayed
  data_source::ratios achieved;  // compressibility of the generated data, as measured
  nlohmann::json report;         // the --report document (DESIGN.md keys)
  int status = 0;                // exit status
};

// Throws trace_error (one line) on unusable input: a non-empty target without --force, a
// missing target, a damaged trace.
replay_outcome run_replay(trace_reader& trace, const replay_options& options);

// The human summary printed after a replay.
std::string format_outcome(const replay_outcome& r);

}  // namespace fsrr
