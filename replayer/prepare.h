// Prepare: build the trace's initial tree beneath the target before any op is replayed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "content_key.h"
#include "data_source.h"
#include "privilege.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

struct prepare_options {
  privilege_options privilege;  // owners, set-id bits, privileged xattrs: see privilege.h
  // Refuse (an error, before anything is created) a tree that does not fit the target's
  // free blocks or inodes.
  bool space_check = true;
  // Called now and then with (entries done, entries total) for a progress line.
  std::function<void(uint64_t, uint64_t)> progress;
  // Placed paths whose entries, and all beneath them, are there already as the trace has them
  // (a compare's source file system, prepared by an earlier run): not created again.
  std::vector<std::string> in_place;
};

struct prepare_result {
  uint64_t files = 0;
  uint64_t dirs = 0;
  uint64_t symlinks = 0;
  uint64_t hardlinks = 0;  // extra names of an inode already created
  uint64_t other = 0;      // fifos and sockets
  uint64_t skipped = 0;    // device nodes, and symlinks whose target the recording never read
  uint64_t bytes = 0;      // data bytes written
  uint64_t xattrs = 0;
  uint64_t withheld = 0;   // set-id modes and privileged xattrs left out (privilege.h)
  uint64_t wall_ns = 0;
  uint64_t errors = 0;
  std::vector<std::string> first_errors;  // up to 10, "path: what"
};

// What the tree needs on each root's file system, and what is there.
struct space_need {
  int root = -1;  // target_root fd
  uint64_t bytes = 0, inodes = 0;
};
std::vector<space_need> tree_needs(trace_reader& trace, const target_root& target,
                                   const prepare_options& options);

// Fails (one line) if a root's file system lacks the bytes or inodes the tree needs;
// prepare_tree calls it first when options.space_check.
result<void> check_space(trace_reader& trace, const target_root& target,
                         const prepare_options& options);

// Fails only on the space check; entries that cannot be made are counted in errors.
result<prepare_result> prepare_tree(trace_reader& trace, const target_root& target,
                                    const data_source& data, const prepare_options& options);

}  // namespace fsrr
