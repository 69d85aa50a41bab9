// The state a trace implies beneath the target, entry by entry: what verify checks. It starts
// as the initial tree (expected_from_tree); the end-state model (end_state.h) applies the
// recorded events to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data_flow.h"
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

// What the state holds of the bytes of changed files: their pieces as the data flow
// (data_flow.h) has them, for verify --content, or nothing (check_content false), which spares
// the data flow's model of every file's extents — a third of verify's memory.
enum class model_content : bool { no, yes };

}  // namespace fsrr
