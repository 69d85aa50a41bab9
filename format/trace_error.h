#pragma once

#include <stdexcept>
#include <string>

namespace fsrr {

// A failure that ends the command: what() is the one line the user sees after "fsrr: ".
struct trace_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One that ends it with an exit status of its own: `record`'s 126 (a command that cannot be
// run), 127 (not found) and 125 (fsrr failed), as env, timeout and nice have them.
struct status_error : trace_error {
  status_error(int status, const std::string& what) : trace_error(what), status(status) {}
  int status;
};

}  // namespace fsrr
