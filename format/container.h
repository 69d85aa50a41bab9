// The frame layer of a trace file: zstd frames holding blocks, skippable frames holding the
// header and footer, and a scan that finds them and the point where a torn file stops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "result.h"

namespace fsrr::container {

// Skippable frame magics (zstd reserves 0x184D2A50..5F); unknown ones are skipped on read.
inline constexpr uint32_t header_magic = 0x184D2A5A;
inline constexpr uint32_t footer_magic = 0x184D2A5B;
inline constexpr uint32_t trailer_magic = 0x45525346;  // "FSRE": last 4 bytes of a closed trace
inline constexpr size_t hash_bytes = 16;               // BLAKE2b-128 over header/footer payloads
// Largest block a reader accepts: an untrusted size field must not drive an allocation.
// The most a block may decompress to. The writer's stay far below (8 MiB of events, 64k tree
// entries, the names interned between two flushes); a claim beyond is refused before memory
// is sized to it.
inline constexpr uint64_t max_block_bytes = 256ull << 20;
// The most zstd can expand a frame by: a 4-byte RLE block yields at most 128 KiB.
inline constexpr uint64_t max_zstd_expansion = 32768;

// A checksummed skippable frame: [magic][size][payload][blake2b(payload)].
// `trailer` appends [u32 payload size][trailer_magic] inside the frame.
std::vector<uint8_t> skippable_frame(uint32_t magic, std::span<const uint8_t> payload,
                                     bool trailer = false);
// The payload of a frame written by skippable_frame (within `frame`), or why it is not one.
result<std::span<const uint8_t>> open_skippable(std::span<const uint8_t> frame, bool trailer);

result<std::vector<uint8_t>> compress_frame(std::span<const uint8_t> payload, int level);
// Decompresses one zstd frame into `out`; checks content size, bounds and checksum.
result<void> decompress_frame(std::span<const uint8_t> frame, std::vector<uint8_t>& out);

struct frame_ref {
  enum kind_t : uint8_t { header, block, footer, skipped } kind;
  uint64_t offset;
  uint64_t size;
};

struct scan_result {
  std::vector<frame_ref> frames;
  uint64_t end = 0;     // offset after the last whole frame
  std::string torn;     // why the scan stopped before the end of the file ("" = it did not)
  std::string corrupt;  // a frame that cannot be a torn tail ("" = none)
};

// Walks the frames of a whole file image. A frame that runs past the end is a torn tail; a
// frame that is malformed before the end is corruption.
scan_result scan(std::span<const uint8_t> file);

}  // namespace fsrr::container
