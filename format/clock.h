// The clock fsrr reads everywhere: a clock's time in ns, CLOCK_MONOTONIC unless told (the
// clock of the trace's timestamps, bpf_ktime_get_ns()).
#pragma once

#include <time.h>

#include <cstdint>

namespace fsrr {

inline uint64_t clock_ns(clockid_t clock) {
  timespec t;
  ::clock_gettime(clock, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(t.tv_nsec);
}

inline uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

}  // namespace fsrr
