// The recorder's reading of a clock, in ns (CLOCK_MONOTONIC unless told).
#pragma once

#include <time.h>

#include <cstdint>

namespace fsrr::recorder {

inline uint64_t clock_ns(clockid_t clock = CLOCK_MONOTONIC) {
  timespec t;
  ::clock_gettime(clock, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace fsrr::recorder
