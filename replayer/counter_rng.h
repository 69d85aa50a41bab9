// Counter-based pseudo-random numbers: every value is a function of a position alone, so any
// byte range of a generated file can be produced on its own, in any order, on any thread.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "hash.h"  // mix64

namespace fsrr {

// wyrand (Wang Yi): output n of a stream started at s is wyrand_at(s + n * wyrand_step).
inline constexpr uint64_t wyrand_step = 0xa0761d6478bd642full;

inline uint64_t wyrand_at(uint64_t counter) {
  unsigned __int128 m = static_cast<unsigned __int128>(counter) * (counter ^ 0xe7037ed1a0b428dbull);
  return static_cast<uint64_t>(m >> 64) ^ static_cast<uint64_t>(m);
}

// Stores little-endian on every host so a seed means the same bytes everywhere.
inline void store_le64(uint8_t* dst, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(dst, &v, sizeof v);
}

// A sequential stream for building tables, where a running state is simpler than counters.
struct wyrand {
  uint64_t state;

  uint64_t next() { return wyrand_at(state += wyrand_step); }
  // Uniform in [0, n) by multiply-shift; the bias (n / 2^32) is irrelevant here.
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

}  // namespace fsrr
