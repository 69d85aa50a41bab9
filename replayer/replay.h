// replay: the whole job behind `fsrr replay` — confine to the target, build the initial tree,
// re-issue the recorded events, and produce the report.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "data_source.h"
#include "peers.h"
#include "prepare.h"
#include "report.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

struct replay_options {
  std::string target;
  std::vector<map_rule> maps;
  data_spec data;
  std::string timing = "faithful";  // faithful | think | afap
  double speed = 1.0;
  bool force = false;                         // replay into a non-empty target
  bool strict = false;                        // stop at the first mismatch
  bool issue_all = false;  // issue calls whose recorded failure came from the environment
  // io_uring and AIO requests through the same engine (false: as the syscalls doing the same)
  bool same_engines = true;
  bool mmap_as_write = false;  // stores through shared mappings as pwrite, not through a mapping
  privilege_options privilege;  // --owners, --keep-privileged (privilege.h)
  bool space_check = true;      // refuse a tree the target has no room for (prepare.h)
  bool progress = false;                      // a progress line on stderr
  const std::atomic<bool>* cancel = nullptr;  // set (by a signal handler) to stop early
  std::function<void()> between;  // after prepare, before the replay (compare drops caches)
  // Several replays of one spec (compare) build and measure its data once: when set, `source`
  // (made from `data`) is used as is, and `ratios` stands for its measure().
  const data_source* source = nullptr;
  std::optional<data_source::ratios> ratios;
  std::vector<std::string> in_place;  // prepare_options::in_place
  // A replay shared by several processes (mpi/): one of them built the initial tree, the
  // others find it there (no emptiness check, no prepare); every one calls `after_prepare`
  // (an error ends the replay before its first op), then replays its share (engine.h's
  // peers and start_at, the latter called even when the trace has no events).
  bool tree_prepared = false;
  std::function<result<void>()> after_prepare;
  replay_peers* peers = nullptr;
  std::function<uint64_t()> start_at;
  uint64_t start_spin_ns = 200'000;  // engine_options::start_spin_ns
  bool realtime = false;             // engine_options::realtime; refused when not allowed
  bool spread = true;                // engine_options::spread
};

struct replay_outcome {
  replay_report report;  // report_json / report_table render it
  int status = 0;        // exit status: non-zero after prepare errors or an early stop
};

// Fails (one line) on unusable input: a non-empty target without --force, a missing target,
// bad options, a tree that does not fit. Damage met in the events is an early stop in the
// outcome's report (status 1), after what replayed before it.
result<replay_outcome> run_replay(trace_reader& trace, const replay_options& options);

// The human summary printed after a replay: prepare, then the op table.
std::string format_outcome(const replay_outcome& r);

}  // namespace fsrr
