// replay: the whole job behind `fsrr replay` — confine to the target, build the initial tree,
// re-issue the recorded events through a backend (backend.h), and produce the report.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend.h"
#include "data_source.h"
#include "prepare.h"
#include "report.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

// What the user asked of a replay (fsrr replay's options).
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
  bool realtime = false;  // engine_options::realtime; refused when not allowed
};

struct replay_outcome {
  replay_report report;  // report_json / report_table render it
  int status = 0;        // exit status: non-zero after prepare errors or an early stop
};

// What a caller that runs replays its own way brings to one: compare, which replays one
// spec many times, and the MPI ranks, which share one target.
struct replay_setup {
  // Built and measured once for several replays: used as is (made from the options' `data`),
  // and `ratios` stands for its measure().
  const data_source* source = nullptr;
  std::optional<data_source::ratios> ratios;
  std::vector<std::string> in_place;  // prepare_options::in_place
  // Another process builds the tree in this target (an MPI rank but the first): it may hold
  // it already, so no emptiness check.
  bool tree_elsewhere = false;
};

// A replay in its steps — open, prepare, run — for a caller that does something between them
// (compare drops the caches after prepare; MPI ranks agree that the tree is whole, then start
// together). run_replay() takes all three.
class replay_job {
 public:
  // Fails (one line) on unusable input: bad options, a missing target, a non-empty one
  // without --force.
  static result<replay_job> open(trace_reader& trace, const replay_options& options,
                                 replay_setup setup = {});
  replay_job(replay_job&&) noexcept;
  ~replay_job();
  // Builds the initial tree. Fails on a tree that does not fit; errors met on single entries
  // are counted in the report's prepare section.
  result<void> prepare();
  // Re-issues the events through `backend` (local_backend when not given). Damage met in the
  // events is an early stop in the outcome's report (status 1), after what replayed before it.
  replay_outcome run(replay_backend& backend);
  replay_outcome run();

 private:
  struct state;
  explicit replay_job(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

// open, prepare and run, through this process alone.
result<replay_outcome> run_replay(trace_reader& trace, const replay_options& options);

// The human summary printed after a replay: prepare, then the op table.
std::string format_outcome(const replay_outcome& r);

}  // namespace fsrr
