// The end state a recording implies: the initial tree's expected state (expected_from_tree)
// with the recorded operations applied — files created or changed with their final sizes,
// renames, hard links, symlinks, deletions (expected absent), directories, modes and owners
// set explicitly. What the trace does not determine is not checked: a mode given at creation
// passed through an unknown umask, so it counts only once a chmod set it; mtimes of changed
// files moved with every write. compare() in verify.h checks a target against it.
#pragma once

#include "trace_reader.h"
#include "verify.h"

namespace fsrr {

expected_state expected_end_state(trace_reader& trace);

}  // namespace fsrr
