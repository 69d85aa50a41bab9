// One trace's clock on another's: the line merge puts each input's CLOCK_MONOTONIC times on,
// the merged trace's realtime clock from the earliest start.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace fsrr::transform {

// Where trace time `t` of a trace falls on another clock: `offset` + t. Exposed for tests.
struct clock_line {
  int64_t offset = 0;  // ns
  uint64_t at(uint64_t t) const;
};
// A trace's time 0 on CLOCK_REALTIME, from its (monotonic, realtime) calibration pairs, the
// first being its own at time 0 (`base_mono`, `base_real`): the median of their differences.
clock_line realtime_line(uint64_t base_mono, int64_t base_real,
                         const std::vector<std::pair<uint64_t, int64_t>>& pairs);

}  // namespace fsrr::transform
