// crashtest: what a recorded workload leaves behind after a power cut, on each file system.
// The trace is replayed on a fresh file system of each SPEC whose device logs every write and
// flush (block_log.h); after each op that promised durability (model/durability.h) the replay
// notes where the log stood. For each such crash point the device is rebuilt as a power cut
// would leave it — the writes up to the last flush before that point — mounted (the journal
// recovers), compared with what the trace promised by then (size and bytes of every promised
// file, as verify --content knows them), unmounted and checked by the file system's own
// checker, read-only.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data_source.h"
#include "fs_spec.h"
#include "result.h"

namespace fsrr::lab {

struct crash_options {
  std::string trace;
  std::vector<fs_spec> specs;
  data_spec data;
  std::string images;  // a directory of fsrr's own for images, logs and mount points
  const std::atomic<bool>* cancel = nullptr;  // set (by a signal handler) to stop early
  std::string keep;  // a directory for the first state with a finding of each SPEC; "": none
};

struct crash_finding {
  std::string kind;      // crash_kinds
  uint64_t point = 0;    // the seq of the op after which the power was cut
  std::string op;        // that op's name
  std::string path;      // the file (lost_durable, rename_not_atomic)
  std::string promised;  // "fsync #12", "the initial tree, synced before the workload"
  std::string expected;  // "4096 bytes", what the promise was
  std::string found;     // what was found instead, or the tool's last line
};

struct crash_fs_result {
  std::string name;  // the SPEC as given
  std::string kind, mkfs_options, mount_options;
  uint64_t wall_ns = 0;  // all of it: made, replayed, states checked
  uint64_t points = 0;      // crash points tried
  uint64_t states = 0;      // distinct crash states built, mounted and checked
  uint64_t log_writes = 0;  // block writes the device got, from its mount to its unmount
  uint64_t log_flushes = 0;  // (the mount, the initial tree and the final unmount's too)
  uint64_t replay_mismatches = 0;  // results other than recorded: the oracle assumes them
  uint64_t check_ns = 0;  // building and checking the states
  // finding kind -> count (every kind listed); a file lost counts once, where first found lost
  std::map<std::string, uint64_t> counts;
  std::vector<crash_finding> first;        // the first findings (up to 10)
  std::string error;                       // the run could not be made: why
  std::string first_state;  // keep/SPEC.img: the first state with a finding, before recovery
};

// rename_not_atomic: a promised file replaced by a rename held neither the old bytes nor the
// new after the cut — what applications expect, not what POSIX promises without an fsync.
inline const std::vector<std::string> crash_kinds = {"lost_durable", "unmountable", "fsck_errors",
                                                     "rename_not_atomic"};

result<std::vector<crash_fs_result>> crashtest(const crash_options& options);

// crashtest.json (docs/design.md).
nlohmann::json crashtest_json(const std::string& trace, const std::vector<crash_fs_result>& all);

}  // namespace fsrr::lab
