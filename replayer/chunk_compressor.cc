#include "chunk_compressor.h"

#include <lzo/lzo1x.h>
#include <zstd.h>

#include <algorithm>
#include <new>
#include <string>
#include <vector>

namespace fsrr {

namespace {

constexpr int btrfs_zstd_level = 3;

// False if liblzo2 refuses to start (built against another ABI): LZO is then not measured.
bool init_lzo_once() {
  static const bool ok = lzo_init() == LZO_E_OK;
  return ok;
}

// btrfs stores a chunk uncompressed when compressing does not shrink it, so a chunk never
// counts as larger than it is.
uint64_t stored_size(size_t original, size_t compressed) {
  return std::min(original, compressed);
}

}  // namespace

struct chunk_compressor::state {
  ZSTD_CCtx* zstd = ZSTD_createCCtx();
  std::vector<uint8_t> out = std::vector<uint8_t>(
      std::max(ZSTD_compressBound(chunk_bytes), chunk_bytes + chunk_bytes / 16 + 64 + 3));
  std::vector<uint8_t> lzo_work;

  ~state() { ZSTD_freeCCtx(zstd); }
};

double chunk_compressor::totals::zstd_ratio() const {
  return zstd == 0 ? 1.0 : static_cast<double>(original) / static_cast<double>(zstd);
}

double chunk_compressor::totals::lzo_ratio() const {
  if (!lzo_measured) return 0.0;
  return lzo == 0 ? 1.0 : static_cast<double>(original) / static_cast<double>(lzo);
}

chunk_compressor::chunk_compressor(bool with_lzo) : state_(std::make_unique<state>()) {
  if (state_->zstd == nullptr) throw std::bad_alloc();  // what zstd's allocation failing is
  if (with_lzo && init_lzo_once()) state_->lzo_work.resize(LZO1X_1_MEM_COMPRESS);
  totals_.lzo_measured = !state_->lzo_work.empty();
}

chunk_compressor::~chunk_compressor() = default;

void chunk_compressor::add(std::span<const uint8_t> data) {
  state& s = *state_;
  for (size_t at = 0; at < data.size(); at += chunk_bytes) {
    auto chunk = data.subspan(at, std::min(chunk_bytes, data.size() - at));
    size_t z = ZSTD_compressCCtx(s.zstd, s.out.data(), s.out.size(), chunk.data(), chunk.size(),
                                 btrfs_zstd_level);
    if (ZSTD_isError(z)) z = chunk.size();  // cannot happen with a bound-sized buffer: stored
    totals_.original += chunk.size();
    totals_.zstd += stored_size(chunk.size(), z);
    if (!s.lzo_work.empty()) {
      lzo_uint n = 0;
      if (lzo1x_1_compress(chunk.data(), chunk.size(), s.out.data(), &n, s.lzo_work.data()) !=
          LZO_E_OK)
        n = chunk.size();  // lzo1x_1 has no failure on valid buffers: stored
      totals_.lzo += stored_size(chunk.size(), n);
    }
  }
}

}  // namespace fsrr
