// minimize: the smallest part of a trace that still shows what a predicate looks for, by
// delta debugging (ddmin, Zeller & Hildebrandt) over its processes, then threads, then files,
// then single events. Every candidate is a trace that replays on its own (transform/closure.h
// adds what its events need of the rest), replayed into a fresh target — a directory of its
// own, or a file system made for the try (--fs) — after which the predicate runs with
// FSRR_TARGET (the target) and FSRR_REPORT (the replay's JSON report) in its environment:
// exit status 0 means the candidate still shows it. Each target is removed after its try.
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
  bool force = false;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const std::string&)> say;  // progress, a line at a time
};

struct minimize_result {
  uint64_t events_before = 0, events_after = 0;
  uint64_t tree_before = 0, tree_after = 0;
  unsigned tries = 0;
  bool exhausted = false;  // stopped at max_tries: smaller may exist
  uint64_t wall_ns = 0;
};

// An error (one line): a trace the predicate does not hold on, a damaged trace, an output
// that exists, interrupted.
result<minimize_result> minimize(const minimize_options& o);

}  // namespace fsrr::lab
