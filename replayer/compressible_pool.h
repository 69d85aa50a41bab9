// A calibrated pool of 128 KiB pages that compressible data is served from. Each page,
// compressed alone with zstd-3 as btrfs compresses a chunk, shrinks by the target ratio; the knob
// that gets it there is searched for at construction against the real compressor.
//
// Every 4 KiB block is self-contained: its copies reach back only within the block, so a block
// compresses the same next to any other, which lets dedupe splice shared blocks into a chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fsrr {

class compressible_pool {
 public:
  static constexpr size_t block_bytes = 4096;
  static constexpr size_t page_bytes = 128 << 10;
  static constexpr size_t pages = 16;
  // Bytes at the start of each block that the caller overwrites with its own stamp. No copy
  // reads from them, so a stamp changes no other byte's compressibility.
  static constexpr size_t stamp_bytes = 16;

  compressible_pool(uint64_t seed, double target_ratio);

  const uint8_t* block(size_t page, size_t index) const {
    return bytes_.data() + page * page_bytes + index * block_bytes;
  }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace fsrr
