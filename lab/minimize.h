// minimize: the smallest and simplest part of a trace that still shows what a predicate looks
// for. Passes, cheap big cuts first: the initial tree down to what the events name (or what
// they name plus one file as large as the rest together, where the rest only took space);
// delta debugging (ddmin, Zeller & Hildebrandt) over processes, threads, files, then single
// events, smaller parts tried first; then simplifications that keep the trace valid: runs of
// reads or writes of one file coalesced into one op, ops' lengths and initial files' sizes
// halved, a process's threads merged into one; deletion again after those. Every candidate is
// a trace that replays on its own (transform/closure.h adds what its events need of the rest),
// replayed (afap unless keep_timing) into a fresh target — a directory of its own, or a file
// system made for the try (--fs) — after which the predicate runs with FSRR_TARGET (the
// target) and FSRR_REPORT (the replay's JSON report) in its environment: exit status 0 means
// the candidate still shows it; FSRR_TRACE names the candidate trace, for a predicate that
// runs fsrr itself on it (`fsrr crashtest "$FSRR_TRACE" ...`, with no_replay: then no replay
// comes first and FSRR_TARGET and FSRR_REPORT are not set). Two tries run at once (two cores). Each target is removed
// after its try. The result's idle gaps are dropped unless keep_timing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fs_spec.h"
#include "result.h"

namespace fsrr::lab {

struct minimize_options {
  std::string trace, out;
  std::vector<std::string> predicate;  // argv, run without a shell
  std::optional<fs_spec> fs;           // a fresh file system per try (root)
  std::string scratch;                 // where targets go; "" : a new directory in /dev/shm
  unsigned max_tries = 1000;
  unsigned jobs = 2;          // tries at once
  bool keep_timing = false;   // replay tries with the recorded timing; keep the gaps
  bool no_replay = false;     // the predicate replays FSRR_TRACE itself (crashtest)
  bool force = false;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const std::string&)> say;  // progress, a line at a time
};

// What one pass did: the candidate before and after it.
struct minimize_pass {
  std::string name;
  uint64_t events_before = 0, events_after = 0;
  uint64_t tree_before = 0, tree_after = 0;
  uint64_t bytes_before = 0, bytes_after = 0;  // bytes the ops move plus the tree's file sizes
  unsigned tries = 0;
  uint64_t wall_ns = 0;
};

struct minimize_result {
  uint64_t events_before = 0, events_after = 0;
  uint64_t tree_before = 0, tree_after = 0;
  uint64_t bytes_before = 0, bytes_after = 0;
  std::vector<minimize_pass> passes;
  unsigned tries = 0;
  bool exhausted = false;  // stopped at max_tries: smaller may exist
  uint64_t wall_ns = 0;
};

// An error (one line): a trace the predicate does not hold on, a damaged trace, an output
// that exists, interrupted.
result<minimize_result> minimize(const minimize_options& o);

}  // namespace fsrr::lab
