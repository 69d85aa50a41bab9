// verify: does TARGET hold the state the trace implies? The expected state starts as the
// initial tree; the end-state model (end_state.h) applies the recorded events to it; compare()
// then checks every expected entry beneath the target.
#pragma once

#include <cstdint>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "data_flow.h"
#include "data_source.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

struct expected_entry {
  bool absent = false;  // must not exist (deleted or renamed away)
  uint32_t mode = 0;    // type bits always checked; permission bits if check_mode
  bool check_mode = true;
  uint64_t size = 0;  // regular files
  bool check_size = true;
  std::string target;  // symlinks
  int64_t mtime_ns = 0;
  bool check_mtime = true;
  uint32_t uid = 0, gid = 0;
  bool check_owner = true;
  std::vector<std::pair<std::string, uint32_t>> xattrs;  // name, value size
  bool check_xattrs = true;
  uint32_t link_group = 0;  // entries of one group must be one inode
  // A regular file's bytes, as the data flow has them (data_flow.h); checked with --content
  std::vector<source_piece> content;
  bool check_content = false;
  // Where the entry stands in trace_reader::tree(), if it came from there; and whether the
  // trace changed it since (else the tree entry describes it whole).
  size_t tree_index = SIZE_MAX;
  bool changed = false;
};

// Keyed by recorded absolute path.
using expected_state = std::map<std::string, expected_entry>;

expected_state expected_from_tree(trace_reader& trace);
// Its parts: whether tree entry `e` is expected at all (devices, and symlinks without a known
// target, are never created), and the
// expected entry of tree()[i].
bool expected_in_tree(const tree_entry& e);
expected_entry expected_of(trace_reader& trace, size_t i);

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

}  // namespace fsrr
