// How fsrr's libraries report a failure the caller can act on: a result<T> holds either the
// value or an error, whose message is the one line a user sees after "fsrr: " (no newline).
// Exceptions stay at the edge: the CLI turns an error into that line and an exit status.
// Per-operation syscall results in traces and reports are -errno values: data, not errors.
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>
#include <tl/expected.hpp>

namespace fsrr {

struct error {
  std::string message;
  // An exit status of its own, or 0 for fsrr's usual 1: `record`'s 126 (a command that
  // cannot be run), 127 (not found) and 125 (fsrr failed), as env, timeout and nice have them.
  int status = 0;
};

template <class T = void>
using result = tl::expected<T, error>;

inline tl::unexpected<error> failure(std::string message) {
  return tl::unexpected<error>(error{std::move(message), 0});
}

// An error with its own exit status. Apart from failure(), whose (format, int) would otherwise
// take an argument for a status ("exited with {}", 1 read as status 1, the {} left as is).
inline tl::unexpected<error> failure_with_status(std::string message, int status) {
  return tl::unexpected<error>(error{std::move(message), status});
}

// The failure of a process whose cause another process tells (every MPI rank but rank 0, which
// names the failure of all): exit status 1 and no line.
inline tl::unexpected<error> told_elsewhere() { return tl::unexpected<error>(error{{}, 1}); }

template <class... Args>
tl::unexpected<error> failure(fmt::format_string<Args...> f, Args&&... args) {
  return failure(fmt::format(f, std::forward<Args>(args)...));
}

// The same error, its message prefixed ("--key-file k: " + what went wrong).
inline tl::unexpected<error> failure(const error& e, std::string_view prefix = {}) {
  return tl::unexpected<error>(error{std::string(prefix) + e.message, e.status});
}

}  // namespace fsrr

// Returns the error of `expr` (a result) from the enclosing function, which returns a result.
#define FSRR_TRY(expr)                                                        \
  do {                                                                        \
    if (auto fsrr_try_r_ = (expr); !fsrr_try_r_)                              \
      return ::tl::unexpected<::fsrr::error>(std::move(fsrr_try_r_).error()); \
  } while (0)
