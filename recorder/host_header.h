// The header of a new trace: who wrote it, on what host, when (the clock base), and why.
#pragma once

#include <string>
#include <vector>

#include "event.h"

namespace fsrr {

// Fills writer, clocks (now), hostname, kernel release, page size, cpus and the command.
header_info host_header(trace_kind kind, const std::vector<std::string>& command);

}  // namespace fsrr
