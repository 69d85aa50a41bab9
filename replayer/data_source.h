// Generated file contents. A trace holds sizes and offsets, never bytes; replay writes bytes
// that are a pure function of (seed, file key, offset), so the same replay always writes the
// same data (repeated replays dedupe like repeated real copies) and verify can predict it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fsrr {

enum class data_kind : uint8_t { zero, random, compressible };

struct data_spec {
  data_kind kind = data_kind::zero;
  double ratio = 1.0;        // compressible: target compressed:original ratio, e.g. 2.0
  double dedupe_pct = 0.0;   // share of dedupe units (4 KiB) that repeat a shared block
  uint64_t seed = 0;

  // "zero" | "random" | "compress:RATIO" (RATIO > 1); throws std::invalid_argument with a
  // one-line message on anything else.
  static data_spec parse(std::string_view text, double dedupe_pct = 0.0, uint64_t seed = 0);
  std::string describe() const;  // "compress:2.00 dedupe:30% seed:7"
};

class data_source {
 public:
  explicit data_source(const data_spec& spec);
  ~data_source();
  data_source(const data_source&) = delete;
  data_source& operator=(const data_source&) = delete;

  // The bytes of file `key` at [offset, offset + out.size()). Thread-safe.
  void fill(uint64_t key, uint64_t offset, std::span<uint8_t> out) const;

  struct ratios {
    double zstd = 1.0;  // original / compressed, each 128 KiB chunk compressed alone (btrfs-like)
    double lzo = 1.0;
  };
  // Compresses a deterministic sample of what fill() produces, chunk by chunk.
  ratios measure(uint64_t sample_bytes = 16ull << 20) const;

  const data_spec& spec() const;

 private:
  struct impl;
  impl* impl_;
};

}  // namespace fsrr
