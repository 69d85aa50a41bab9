// Generated file contents. A trace holds sizes and offsets, never bytes; replay writes bytes
// that are a pure function of (seed, file key, offset), so the same replay always writes the
// same data (repeated replays dedupe like repeated real copies) and verify can predict it.
//
// Compressible data comes from a pool calibrated against the zstd library at construction, so
// its bytes are also a function of the zstd version's output sizes; the calibration is coarse
// enough (see compressible_pool.cc) that a compressor update rarely changes them.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "result.h"

namespace fsrr {

enum class data_kind : uint8_t { zero, random, compressible };

struct data_spec {
  static constexpr double max_ratio = 20.0;

  data_kind kind = data_kind::zero;
  double ratio = 1.0;       // compressible: target original:compressed ratio, in (1, max_ratio]
  double dedupe_pct = 0.0;  // share of dedupe units (4 KiB) that repeat a shared block, [0, 100]
  uint64_t seed = 0;

  // "zero" | "random" | "compress:RATIO"; refuses anything else, and a dedupe percentage
  // outside [0, 100].
  static result<data_spec> parse(std::string_view text, double dedupe_pct = 0.0, uint64_t seed = 0);
  // Refuses what parse() would: a ratio outside (1, max_ratio], a dedupe outside [0, 100].
  result<void> check() const;
  std::string describe() const;  // "compress:2.00 dedupe:30% seed:7"
};

class data_source {
 public:
  // Dedupe works on aligned units of this size, and no two of them repeat unless deduped.
  static constexpr uint64_t dedupe_unit_bytes = 4096;
  // Compressible data reaches its ratio on each aligned chunk of this size compressed alone, the
  // unit btrfs compresses.
  static constexpr uint64_t chunk_bytes = 128 << 10;

  // `spec` passes check() (one that does not is replaced by the nearest valid spec).
  // Compressible data is calibrated here, which takes about 0.1 s.
  explicit data_source(const data_spec& spec);
  ~data_source();
  data_source(const data_source&) = delete;
  data_source& operator=(const data_source&) = delete;

  // The bytes of file `key` at [offset, offset + out.size()). Thread-safe.
  void fill(uint64_t key, uint64_t offset, std::span<uint8_t> out) const;

  struct ratios {
    double zstd = 1.0;  // original / compressed, each 128 KiB chunk compressed alone (btrfs-like)
    double lzo = 1.0;   // a chunk that does not shrink counts at its size, as btrfs stores it;
                        // 0: not measured (liblzo2 would not start)
  };
  // Compresses a deterministic sample of what fill() produces, chunk by chunk, with zstd level 3
  // and lzo1x_1.
  ratios measure(uint64_t sample_bytes = 16ull << 20) const;

  const data_spec& spec() const;

 private:
  struct impl;
  std::unique_ptr<const impl> impl_;
};

}  // namespace fsrr
