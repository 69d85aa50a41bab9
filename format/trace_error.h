// Exceptions, for the edge: the CLI reports a failure by throwing one of these; main() prints
// its line and exits with its status. The libraries below it (format/, replayer/, transform/,
// recorder/, lab/) return result<T> (result.h).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "result.h"

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

[[noreturn]] inline void throw_error(const error& e) {
  if (e.status) throw status_error(e.status, e.message);
  throw trace_error(e.message);
}

// A result's value, or its error thrown as above.
template <class T>
T or_throw(result<T> r) {
  if (!r) throw_error(r.error());
  return std::move(*r);
}
inline void or_throw(const result<void>& r) {
  if (!r) throw_error(r.error());
}

}  // namespace fsrr
