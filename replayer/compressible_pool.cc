#include "compressible_pool.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>

#include "chunk_compressor.h"
#include "counter_rng.h"

namespace fsrr {

namespace {

// The knob runs over [0, 2] in steps of 1/256. Searching a grid rather than a continuum means a
// compressor update changes the chosen knob (and so the bytes of a seed) only if it moves a ratio
// across half a step, under 1% here.
constexpr int knob_steps = 512;
constexpr double knob_at(int step) {
  return step / 256.0;
}

// How a block is made at knob t: literal runs of bytes drawn uniformly from an alphabet,
// interleaved with copies of earlier bytes of the same block. Up to t = 1 the alphabet shrinks
// from 8 to 6 bits and nothing is copied; beyond, the alphabet stays at 6 bits and copies cover
// more of the block in longer pieces. Literals never exceed 6 bits of entropy where copies are
// needed, so btrfs's entropy heuristic does not skip data meant to compress (written to btrfs
// with compress=zstd, not forced, compress:1.5 to compress:5 took 1.44x to 4.49x less space).
// At 6-bit literals zstd wins by entropy coding and lzo (which has none) does not, as with real
// text: zstd 2 ~ lzo 1.5, zstd 5 ~ lzo 3.4.
struct block_model {
  uint32_t alphabet = 256;
  double coverage = 0;  // expected share of bytes that are copies
  double match_mean = 0;
  double literal_mean = 0;  // expected literal run between copies

  explicit block_model(double t) {
    if (t <= 1) {
      alphabet = static_cast<uint32_t>(std::lround(256.0 * std::exp2(-2.0 * t)));
      return;
    }
    alphabet = 64;
    // Uncopied share falls geometrically so that the ratio climbs evenly (1.3 at t = 1, 2 at
    // 1.1, 5 at 1.33, 33 at 2) instead of jumping near the top.
    double rest = std::pow(10.0, -3.4 * (t - 1));
    coverage = 1 - rest;
    match_mean = 8 / std::sqrt(rest);
    literal_mean = match_mean * rest / coverage;
  }
};

// Copies byte by byte: an overlapping copy repeats a short period, as an LZ decoder would.
void copy_back(uint8_t* at, size_t distance, size_t len) {
  for (size_t i = 0; i < len; ++i) at[i] = at[i - distance];
}

void generate_block(wyrand& rng, const block_model& m, const std::array<uint8_t, 256>& symbols,
                    uint8_t* block) {
  constexpr size_t n = compressible_pool::block_bytes;
  constexpr size_t first = compressible_pool::stamp_bytes;
  for (size_t i = 0; i < first; ++i) block[i] = static_cast<uint8_t>(rng.next());
  auto length_around = [&](double mean) {  // uniform in [1, 2 * mean - 1]: no long tail
    return static_cast<size_t>(1 + rng.below(static_cast<uint32_t>(std::max(1.0, 2 * mean - 1))));
  };
  size_t pos = first;
  while (pos < n) {
    size_t literals = m.coverage == 0 ? n - pos : length_around(m.literal_mean);
    for (size_t end = std::min(n, pos + literals); pos < end; ++pos) {
      block[pos] = symbols[rng.below(m.alphabet)];
    }
    if (pos == n) break;
    size_t history = pos - first;
    if (history < 4) continue;
    size_t len = std::min(length_around(m.match_mean), n - pos);
    copy_back(block + pos, 1 + rng.below(static_cast<uint32_t>(history)), len);
    pos += len;
  }
}

std::vector<uint8_t> generate_pool(uint64_t seed, double knob) {
  block_model model(knob);
  wyrand rng{mix64(seed, 0x706f6f6c)};
  // A seeded choice of byte values, so that a small alphabet is not just the low bytes.
  std::array<uint8_t, 256> symbols;
  std::iota(symbols.begin(), symbols.end(), 0);
  for (size_t i = symbols.size() - 1; i > 0; --i) {
    std::swap(symbols[i], symbols[rng.below(static_cast<uint32_t>(i + 1))]);
  }
  std::vector<uint8_t> bytes(compressible_pool::pages * compressible_pool::page_bytes);
  for (size_t at = 0; at < bytes.size(); at += compressible_pool::block_bytes) {
    generate_block(rng, model, symbols, bytes.data() + at);
  }
  return bytes;
}

double zstd_ratio_of(const std::vector<uint8_t>& bytes) {
  chunk_compressor compressor(/*with_lzo=*/false);
  compressor.add(bytes);
  return compressor.sizes().zstd_ratio();
}

}  // namespace

compressible_pool::compressible_pool(uint64_t seed, double target_ratio) {
  std::map<int, double> ratio_at;
  auto ratio = [&](int step) {
    auto [it, fresh] = ratio_at.try_emplace(step);
    if (fresh) it->second = zstd_ratio_of(generate_pool(seed, knob_at(step)));
    return it->second;
  };
  // The ratio rises with the knob, from 1 (random bytes) to ~33: find the two steps around the
  // target and keep the closer one.
  int low = 0;
  int high = knob_steps;
  while (high - low > 1) {
    int mid = (low + high) / 2;
    (ratio(mid) < target_ratio ? low : high) = mid;
  }
  auto miss = [&](int step) { return std::abs(std::log(ratio(step) / target_ratio)); };
  bytes_ = generate_pool(seed, knob_at(miss(low) <= miss(high) ? low : high));
}

}  // namespace fsrr
