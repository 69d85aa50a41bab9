// The initial tree: what existed before the workload ran, as tree entries in a trace.
#pragma once

#include <optional>
#include <string>

#include "event.h"
#include "result.h"
#include "trace_writer.h"

namespace fsrr {

struct snapshot_stats {
  uint64_t entries = 0;
  uint64_t errors = 0;  // entries that vanished or could not be read while walking
};

// The state of one object, by name relative to dirfd, without following a final symlink.
// Interns the xattr names and the symlink target in `w`. nullopt if it cannot be stat'ed.
std::optional<tree_entry> snapshot_entry(trace_writer& w, int dirfd, const char* name,
                                         path_id path);

// Walks `dir` (an existing directory, not followed if it is a symlink) and writes one tree entry
// per object beneath it, the directory itself included, under its canonical absolute path.
// Hard links share a link_group. Stays on one file system. An error if `dir` cannot be
// opened.
result<snapshot_stats> snapshot_tree(trace_writer& w, const std::string& dir);

}  // namespace fsrr
