// What a power cut may not take from a recorded workload, from the trace alone: crash testing's
// oracle (lab/crashtest.h).
//
// A regular file is promised once an op that promises durability covered its last change:
// fsync or fdatasync of it, a write through an open file with O_SYNC or O_DSYNC (when every
// open of the file had it), sync or syncfs; and every file of the initial tree, which the crash
// test syncs before the replay. Promised means found with its size and bytes, by its name: as
// ext4, xfs and btrfs do (POSIX asks for an fsync of the parent directory too), an fsync also
// keeps the name the file had then. A file renamed since (without an fsync of its directory)
// may be found by either name. A file changed again is not promised until the next such op.
// A promised file replaced by a rename (write a temporary file, rename it over the old one)
// must hold the old bytes or the new ones until the name is durable: that one is the
// applications' expectation, reported apart.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "end_state.h"
#include "expected.h"
#include "trace_reader.h"

namespace fsrr {

// Whether the op, once returned, promised that data is on stable storage. `open_flags`: the
// flags of the open file it went through (for writes).
bool promises_durability(const event& e, uint32_t open_flags);

struct promised_file {
  std::string path;      // placed (as verify has it): where it must be found
  // where it may still be found instead: the names it had since its name was durable
  std::vector<std::string> old_paths;
  uint64_t by = 0;       // the seq (replay numbering) of the op that promised it
  bool initial = false;  // promised as part of the initial tree
  expected_entry entry;  // its type, size and bytes (times, owners, mode not looked at)
  // A promised file replaced by a rename whose name is not durable yet: `path` holds `entry`
  // (the new file) or one of `before` (the old ones), never anything else — what applications expect,
  // not what POSIX promises without an fsync. `by` is the rename's seq.
  bool replaced = false;
  std::vector<expected_entry> before;  // the old file, and any replaced since without a promise
};

class durability_oracle {
 public:
  explicit durability_oracle(trace_reader& trace);
  ~durability_oracle();
  durability_oracle(const durability_oracle&) = delete;
  durability_oracle& operator=(const durability_oracle&) = delete;
  // The trace's events in order; every event but stream ones counts a seq, from 0, as the
  // replay numbers its ops.
  void apply(const event& e);
  uint64_t next_seq() const { return seq_; }
  // What must have survived a power cut right after the latest op applied returned: what ops
  // promised that had returned before it started in the recording, and what it promised.
  std::vector<promised_file> promised();

 private:
  struct file_state {
    std::string path;
    std::vector<std::string> old_paths;
    bool dirty = true;          // changed since it was last promised
    bool promised = false;
    bool initial = false;
    bool plain_open = false;    // opened at least once without O_DSYNC
    uint64_t by = 0;
    uint64_t by_end = 0;  // when the op that promised it returned, in the recording
  };
  // A directory (what was beneath `from` is now beneath `to`), or a file the trace has no id
  // for, renamed; the name not durable yet.
  struct move {
    std::string from, to;
    bool dir = true;
  };
  struct replacement {
    std::string path;
    std::vector<expected_entry> before;
    file_id by = no_id;  // the file renamed over it
    uint64_t seq = 0;
  };
  void promise(file_state& f, const event& by);
  void note_replacement(const event& e, const expected_state& before);
  void note_rename(const event& e, const expected_state& before);
  trace_reader& trace_;
  end_state_model model_;
  std::unordered_map<file_id, file_state> files_;
  std::vector<replacement> replacements_;
  std::vector<move> moves_;
  uint64_t seq_ = 0;
  uint64_t last_seq_ = 0, last_ts_ = 0;  // the latest op applied: the crash point's
};

}  // namespace fsrr
