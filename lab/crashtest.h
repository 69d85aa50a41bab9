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
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data_source.h"
#include "fs_spec.h"
#include "result.h"

namespace fsrr::lab {

// Where the power is cut: after each op that promised durability (`durable`), after every
// N-th op (`every:N`: seqs N-1, 2N-1, ...), or after the ops of the seqs named (`seq:A,B,...`);
// seqs count the trace's ops from 0 as replay numbers them. Ops the replay models without a
// syscall (fd table, process structure) are never points.
struct crash_points {
  enum class rule { durable, every, seqs } how = rule::durable;
  uint64_t every = 0;
  std::set<uint64_t> seqs;
  std::string text = "durable";  // as given
  bool at(uint64_t seq, bool durable) const {
    switch (how) {
      case rule::durable: return durable;
      case rule::every: return seq % every == every - 1;
      default: return seqs.count(seq) > 0;
    }
  }
};
result<crash_points> parse_crash_points(std::string_view text);

struct crash_options {
  std::string trace;
  std::vector<fs_spec> specs;
  data_spec data;
  std::string images;  // a directory of fsrr's own for images, logs and mount points
  const std::atomic<bool>* cancel = nullptr;  // set (by a signal handler) to stop early
  std::string keep;  // a directory for the first state with a finding of each SPEC; "": none
  crash_points points;
  // At each state, this many more: a seeded random subset of the writes in flight since the
  // last flush (before the state's last point) on top of it, in their order.
  unsigned reorder = 0;
  uint64_t seed = 0;
};

struct crash_finding {
  std::string kind;      // crash_kinds
  uint64_t point = 0;    // the seq of the op after which the power was cut
  std::string op;        // that op's name
  std::string path;      // the file (lost_durable, rename_not_atomic)
  std::string promised;  // "fsync #12", "the initial tree, synced before the workload"
  std::string expected;  // "4096 bytes", what the promise was
  std::string found;     // what was found instead, or the tool's last line
  unsigned reorder = 0;  // 0: the state as the flushes left it; k: its k-th reordered subset
};

struct crash_fs_result {
  std::string name;  // the SPEC as given
  std::string kind, mkfs_options, mount_options;
  uint64_t wall_ns = 0;  // all of it: made, replayed, states checked
  uint64_t points = 0;      // crash points tried
  uint64_t states = 0;      // distinct crash states built, mounted and checked
  uint64_t reordered = 0;   // of those, with a subset of the writes in flight (--reorder)
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
nlohmann::json crashtest_json(const crash_options& options, const std::vector<crash_fs_result>& all);

}  // namespace fsrr::lab
