// Compresses data the way btrfs does: each 128 KiB chunk alone, zstd at level 3 (btrfs's
// default) and lzo1x_1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace fsrr {

class chunk_compressor {
 public:
  static constexpr size_t chunk_bytes = 128 << 10;

  struct totals {
    uint64_t original = 0;
    uint64_t zstd = 0;
    uint64_t lzo = 0;  // stays 0 unless lzo was asked for
    bool lzo_measured = false;  // asked for, and liblzo2 started

    double zstd_ratio() const;
    double lzo_ratio() const;  // 0 when not measured: no ratio, not a ratio of 1
  };

  explicit chunk_compressor(bool with_lzo);
  ~chunk_compressor();
  chunk_compressor(const chunk_compressor&) = delete;
  chunk_compressor& operator=(const chunk_compressor&) = delete;

  // Compresses `data` in chunk_bytes pieces (the last may be shorter) and adds to the totals.
  void add(std::span<const uint8_t> data);
  const totals& sizes() const { return totals_; }

 private:
  struct state;
  std::unique_ptr<state> state_;
  totals totals_;
};

}  // namespace fsrr
