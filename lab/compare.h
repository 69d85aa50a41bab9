// compare: one recorded workload replayed on several file systems that fsrr makes itself, in
// rounds (noise hits all alike), each run on a fresh file system: make, prepare, (drop
// caches), replay, syncfs (timed apart), verify, space used, tear down. The result is
// compare.json (keys in docs/design.md), a table, and a page (compare_html.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aging.h"
#include "data_source.h"
#include "fs_spec.h"
#include "result.h"

namespace fsrr::lab {

struct compare_options {
  std::string trace;
  std::vector<fs_spec> fs;
  unsigned runs = 3;
  std::string timing = "afap";
  data_spec data;
  unsigned repeat = 1;       // replays per run, into copy01..copyN (seed 003)
  bool drop_caches = false;  // between prepare and replay
  std::string images;        // where images and mount points go; "" : /var/tmp/...
  fs_spec source_fs;         // what the read-only directories are prepared on
  bool all_on_test = false;  // no source file system
  bool issue_all = false;    // replay's --issue-all
  bool realtime = false;     // replay's --realtime (timed modes; refused where not allowed)
  std::string baseline;      // an earlier compare.json
  // Each file system as mkfs made it ("none") and/or aged by these profiles, a row each.
  std::vector<age_profile> ages;
  // Where aged images are kept for the next compare: "" for IMAGES/aged (--images given) or
  // /var/cache/fsrr/aged; "off" to age anew, in the images directory, and keep nothing.
  std::string age_cache;
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(const std::string&)> say;  // progress, a line at a time
};

// Where a compare's time went, summed over its runs.
struct compare_cost {
  uint64_t make_ns = 0;     // mkfs and mount
  uint64_t prepare_ns = 0;  // the initial tree
  uint64_t drop_ns = 0;     // --drop-caches
  uint64_t replay_ns = 0;
  uint64_t sync_ns = 0;    // syncfs after the replay
  uint64_t verify_ns = 0;  // the end state checked, space and logical bytes counted
  uint64_t unmake_ns = 0;  // unmount, loop device and image removed
  uint64_t age_ns = 0;     // aged images made (not those found in the cache)
  uint64_t layout_ns = 0;  // the layout of what the replay left, and the free space
  compare_cost& operator+=(const compare_cost& o);
  // What the file systems' own work took: all of the above.
  uint64_t work_ns() const {
    return make_ns + prepare_ns + drop_ns + replay_ns + sync_ns + verify_ns + unmake_ns + age_ns +
           layout_ns;
  }
};

struct compare_outcome {
  nlohmann::json result;  // compare.json
  int status = 0;         // 0; 1 if a run failed or did not verify; 3 if slower than baseline
  uint64_t wall_ns = 0;   // the whole compare
  compare_cost cost;      // of which the runs' steps; the rest is compare's own
};

// An error (one line) on unusable input, a run that could not be made or replayed, or when
// interrupted; nothing is left mounted then either.
result<compare_outcome> run_compare(const compare_options& options);

// The terminal table of a result.
std::string compare_table(const nlohmann::json& result);

// The machine a report was made on: kernel, cpu, cpus, memory_bytes, fsrr (compare.json's
// `system`, crashtest.json's).
nlohmann::json machine_info();

}  // namespace fsrr::lab
