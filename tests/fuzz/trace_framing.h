// The fuzzer's input format and its translation into a trace file. The fuzzer mutates what
// the reader sees after the checksums (decompressed block payloads), and this framing wraps
// them in valid frames, so that the mutations reach the FlatBuffers verifier and the column
// decoders instead of dying at a checksum.
//
// Input: one flags byte, then records [u32 little-endian length][payload]; a length past the
// end takes the rest. Record 0 is the header payload, the others are block payloads; with
// flag_footer the last record is the footer payload. Its block index is patched to the
// frames actually written, since recompressed blocks do not keep their original sizes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "container.h"
#include "trace_generated.h"

namespace fsrr::fuzz {

inline constexpr uint8_t flag_footer = 1;
inline constexpr uint8_t flag_torn = 2;  // a few zero bytes after the last frame
inline constexpr int zstd_level = 1;     // the fuzzer's time goes to the reader, not zstd

inline void put_record(std::vector<uint8_t>& out, std::span<const uint8_t> payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  uint8_t b[4];
  std::memcpy(b, &n, 4);
  out.insert(out.end(), b, b + 4);
  out.insert(out.end(), payload.begin(), payload.end());
}

inline std::vector<std::span<const uint8_t>> split_records(std::span<const uint8_t> in) {
  std::vector<std::span<const uint8_t>> out;
  while (!in.empty()) {
    uint32_t n = 0;
    std::memcpy(&n, in.data(), std::min<size_t>(4, in.size()));
    in = in.subspan(std::min<size_t>(4, in.size()));
    const size_t take = std::min<size_t>(n, in.size());
    out.push_back(in.first(take));
    in = in.subspan(take);
  }
  return out;
}

// Points the footer's block index at the frames written (only if the footer verifies and
// lists as many blocks: otherwise the reader is left to reject it).
inline void patch_footer(std::vector<uint8_t>& footer,
                         const std::vector<container::frame_ref>& frames) {
  flatbuffers::Verifier v(footer.data(), footer.size());
  if (!v.VerifyBuffer<fb::Footer>("FSRF")) return;
  const auto* refs = flatbuffers::GetRoot<fb::Footer>(footer.data())->blocks();
  if (!refs || refs->size() != frames.size()) return;
  for (size_t i = 0; i < frames.size(); ++i) {
    auto* r = const_cast<fb::BlockRef*>(refs->Get(i));
    uint8_t* p = reinterpret_cast<uint8_t*>(r);
    const uint64_t off = frames[i].offset, size = frames[i].size;
    std::memcpy(p, &off, 8);  // BlockRef starts with offset, then size (trace.fbs)
    std::memcpy(p + 8, &size, 8);
  }
}

// The trace file an input stands for.
inline std::vector<uint8_t> frame_trace(std::span<const uint8_t> input) {
  std::vector<uint8_t> file;
  if (input.empty()) return file;
  const uint8_t flags = input[0];
  const auto records = split_records(input.subspan(1));
  if (records.empty()) return file;
  const bool has_footer = (flags & flag_footer) && records.size() >= 2;
  file = container::skippable_frame(container::header_magic, records[0]);
  std::vector<container::frame_ref> frames;
  for (size_t i = 1; i < records.size() - (has_footer ? 1 : 0); ++i) {
    const auto f = container::compress_frame(records[i], zstd_level).value();
    frames.push_back({container::frame_ref::block, file.size(), f.size()});
    file.insert(file.end(), f.begin(), f.end());
  }
  if (has_footer) {
    std::vector<uint8_t> footer(records.back().begin(), records.back().end());
    patch_footer(footer, frames);
    const auto f = container::skippable_frame(container::footer_magic, footer, true);
    file.insert(file.end(), f.begin(), f.end());
  }
  if (flags & flag_torn) file.insert(file.end(), 5, 0);
  return file;
}

// The input that stands for a trace file (the inverse, for seeding the corpus). Frames that
// fail their checksum are left out.
inline std::vector<uint8_t> unframe_trace(std::span<const uint8_t> file) {
  const auto scan = container::scan(file);
  std::vector<uint8_t> out{0};
  for (const auto& f : scan.frames) {
    const auto bytes = file.subspan(f.offset, f.size);
    std::vector<uint8_t> block;
    if (f.kind == container::frame_ref::header) {
      if (const auto payload = container::open_skippable(bytes, false)) put_record(out, *payload);
    } else if (f.kind == container::frame_ref::block) {
      if (container::decompress_frame(bytes, block)) put_record(out, block);
    } else if (f.kind == container::frame_ref::footer) {
      if (const auto payload = container::open_skippable(bytes, true)) {
        put_record(out, *payload);
        out[0] |= flag_footer;
      }
    }
  }
  return out;
}

}  // namespace fsrr::fuzz
