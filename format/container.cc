#include "container.h"

#include <sodium.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace fsrr::container {
namespace {

constexpr uint32_t skippable_first = 0x184D2A50;
constexpr uint32_t skippable_mask = 0xFFFFFFF0;

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // the format is little-endian, like every machine fsrr runs on
}

void store_u32(std::vector<uint8_t>& out, uint32_t v) {
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}

void hash(std::span<const uint8_t> data, uint8_t out[hash_bytes]) {
  crypto_generichash(out, hash_bytes, data.data(), data.size(), nullptr, 0);
}

}  // namespace

std::vector<uint8_t> skippable_frame(uint32_t magic, std::span<const uint8_t> payload,
                                     bool trailer) {
  const size_t body = payload.size() + hash_bytes + (trailer ? 8 : 0);
  std::vector<uint8_t> out;
  out.reserve(8 + body);
  store_u32(out, magic);
  store_u32(out, static_cast<uint32_t>(body));
  out.insert(out.end(), payload.begin(), payload.end());
  uint8_t h[hash_bytes];
  hash(payload, h);
  out.insert(out.end(), h, h + hash_bytes);
  if (trailer) {
    store_u32(out, static_cast<uint32_t>(payload.size()));
    store_u32(out, trailer_magic);
  }
  return out;
}

result<std::span<const uint8_t>> open_skippable(std::span<const uint8_t> frame, bool trailer) {
  const size_t extra = 8 + hash_bytes + (trailer ? 8 : 0);
  if (frame.size() < extra) return failure("frame too short");
  const size_t len = frame.size() - extra;
  if (trailer && load_u32(frame.data() + frame.size() - 8) != len)
    return failure("trailer length does not match the frame");
  const auto payload = frame.subspan(8, len);
  uint8_t h[hash_bytes];
  hash(payload, h);
  if (std::memcmp(h, frame.data() + 8 + len, hash_bytes) != 0) return failure("checksum mismatch");
  return payload;
}

result<std::vector<uint8_t>> compress_frame(std::span<const uint8_t> payload, int level) {
  // One context per thread: creating one costs more than compressing a small block.
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(),
                                                                        ZSTD_freeCCtx);
  ZSTD_CCtx_reset(cctx.get(), ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
  // Into a buffer that is not zeroed first: the frame touches only the pages it fills, a
  // fraction of the bound's (a std::vector of that size would fault in and zero them all).
  const size_t bound = ZSTD_compressBound(payload.size());
  const auto out = std::make_unique_for_overwrite<uint8_t[]>(bound);
  const size_t n = ZSTD_compress2(cctx.get(), out.get(), bound, payload.data(), payload.size());
  if (ZSTD_isError(n)) return failure("zstd: {}", ZSTD_getErrorName(n));
  return std::vector<uint8_t>(out.get(), out.get() + n);
}

result<void> decompress_frame(std::span<const uint8_t> frame, std::vector<uint8_t>& out) {
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(),
                                                                        ZSTD_freeDCtx);
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN)
    return failure("bad frame header");
  if (content > max_block_bytes)
    return failure("block claims {} bytes, more than a block may hold ({})", content,
                   max_block_bytes);
  if (content > frame.size() * max_zstd_expansion)
    return failure("block claims {} bytes, more than a frame of {} bytes can hold", content,
                   frame.size());
  out.resize(content);
  const size_t n = ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), frame.data(),
                                       frame.size());
  if (ZSTD_isError(n))
    return failure(ZSTD_getErrorCode(n) == ZSTD_error_checksum_wrong ? "checksum mismatch"
                                                                     : ZSTD_getErrorName(n));
  if (n != content) return failure("frame shorter than its declared size");
  return {};
}

scan_result scan(std::span<const uint8_t> file) {
  scan_result r;
  uint64_t pos = 0;
  while (pos < file.size()) {
    const uint64_t left = file.size() - pos;
    if (left < 8) {
      r.torn = fmt::format("{} stray bytes at offset {}", left, pos);
      break;
    }
    const uint8_t* p = file.data() + pos;
    const uint32_t magic = load_u32(p);
    if ((magic & skippable_mask) == skippable_first) {
      const uint64_t size = 8ull + load_u32(p + 4);
      if (size > left) {
        r.torn = fmt::format("frame at offset {} needs {} bytes, {} left", pos, size, left);
        break;
      }
      const auto kind = magic == header_magic   ? frame_ref::header
                        : magic == footer_magic ? frame_ref::footer
                                                : frame_ref::skipped;
      r.frames.push_back({kind, pos, size});
      pos += size;
    } else if (magic == ZSTD_MAGICNUMBER) {
      const size_t size = ZSTD_findFrameCompressedSize(p, left);
      if (ZSTD_isError(size)) {
        if (ZSTD_getErrorCode(size) == ZSTD_error_srcSize_wrong) {
          r.torn = fmt::format("block frame at offset {} is cut short", pos);
        } else {
          r.corrupt = fmt::format("frame at offset {}: {}", pos, ZSTD_getErrorName(size));
        }
        break;
      }
      r.frames.push_back({frame_ref::block, pos, size});
      pos += size;
    } else {
      r.corrupt = fmt::format("no frame starts at offset {} (corrupted)", pos);
      break;
    }
  }
  r.end = pos;
  return r;
}

}  // namespace fsrr::container
