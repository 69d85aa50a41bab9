// The end state a recording implies: the initial tree's expected state (expected_from_tree)
// with the recorded operations applied — files created or changed with their final sizes,
// renames, hard links, symlinks, deletions (expected absent), directories, modes and owners
// set explicitly. What the trace does not determine is not checked: a mode given at creation
// passed through an unknown umask, so it counts only once a chmod set it; mtimes of changed
// files moved with every write. verify (verify/verify.h) checks a target against it.
#pragma once

#include <functional>
#include <memory>

#include "expected.h"
#include "fd_map.h"
#include "trace_reader.h"

namespace fsrr {

class end_state_core;  // end_state_core.h

result<expected_state> expected_end_state(trace_reader& trace,
                                          model_content content = model_content::yes);

// The same, event by event: the state at any point of the trace (slice's start).
class end_state_model {
 public:
  explicit end_state_model(trace_reader& trace, model_content content = model_content::no);
  ~end_state_model();
  end_state_model(const end_state_model&) = delete;
  end_state_model& operator=(const end_state_model&) = delete;
  void apply(const event& e);  // the events in trace order
  expected_state result();     // the state after the events applied so far
  expected_state take();       // the same, the model used up: its memory freed as it goes
  // take(), in parts of about `batch` entries, each handed to `each` and then dropped.
  void take(size_t batch, const std::function<void(expected_state&)>& each);
  const fd_map& fds() const;   // the fd tables then

 private:
  std::unique_ptr<end_state_core> core_;
};

}  // namespace fsrr
