#pragma once

#include <stdexcept>
#include <string>

namespace fsrr {

// A failure that ends the command: what() is the one line the user sees after "fsrr: ".
struct trace_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace fsrr
