// verify: does TARGET hold the state the trace implies? The expected state (expected.h) starts
// as the initial tree; the end-state model (end_state.h) applies the recorded events to it;
// compare() then checks every expected entry beneath the target.
#pragma once

#include <cstdint>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "data_source.h"
#include "end_state.h"
#include "expected.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

struct verify_options {
  bool owners = false;  // compare uid/gid (meaningful when the replay ran as root)
  bool times = true;    // compare mtimes
  // Compare set-id bits and security.*/trusted.* xattrs too: a replay leaves them out unless
  // it ran with --keep-privileged (privilege.h).
  bool keep_privileged = false;
  unsigned threads = 0;  // at most this many threads look (0: one per core, up to 4)
  // Set: the files' bytes too, as made by this data source (the replay's --data, --seed).
  const data_source* content = nullptr;
};

struct difference {
  std::string path;  // as recorded
  std::string what;  // "size 4096, expected 1024"
};

std::vector<difference> compare(const expected_state& expected, const target_root& target,
                                const verify_options& options);

// compare() a part of the state at a time, so that a caller may hand the state over in pieces
// and let each go once checked. The parts hold disjoint paths; finish() gives the differences
// in path order, hard-link groups checked across all the parts.
class comparer {
 public:
  comparer(const target_root& target, const verify_options& options);
  ~comparer();
  void check(const expected_state& part);
  size_t checked() const { return checked_; }  // entries so far
  std::vector<difference> finish();
  struct member;  // a name of a hard-link group, as found

 private:
  const target_root& target_;
  const verify_options& options_;
  size_t checked_ = 0;
  std::vector<difference> diffs_;
  std::vector<std::vector<member>> members_;
};

// The trace's end state (end_state.h) handed to `c` a part of about `batch` entries at a time,
// each let go once checked: what verify runs, without the whole state in memory at once.
result<void> check_end_state(trace_reader& trace, comparer& c, model_content content,
                             size_t batch = 16384);

}  // namespace fsrr
