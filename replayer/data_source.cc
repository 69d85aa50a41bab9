#include "data_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "chunk_compressor.h"
#include "compressible_pool.h"
#include "counter_rng.h"

namespace fsrr {

namespace {

constexpr uint64_t unit_bytes = data_source::dedupe_unit_bytes;
constexpr uint64_t units_per_chunk = data_source::chunk_bytes / unit_bytes;
static_assert(unit_bytes == compressible_pool::block_bytes);
static_assert(data_source::chunk_bytes == compressible_pool::page_bytes);

// Deduped units copy one of shared_variants shared blocks per position in the chunk. Giving each
// position its own blocks means one chunk never holds the same shared block twice, so dedupe does
// not make a chunk more compressible than its ratio says. 32 x 8 = 256 blocks (1 MiB): few enough
// that any replay writing a few MiB of deduped units repeats every one of them.
constexpr uint64_t shared_variants = 8;
static_assert(shared_variants <= compressible_pool::pages);

// Salts that keep the hashes drawn from one block hash independent of each other.
constexpr uint64_t dedupe_salt = 0x6465647570652121;
constexpr uint64_t page_salt = 0x7061676570616765;
constexpr uint64_t shared_salt = 0x7368617265642121;

tl::unexpected<error> bad_ratio(std::string_view shown) {
  return failure("compress ratio {} is not a number in (1, {:g}]", shown, data_spec::max_ratio);
}

bool ratio_in_range(double ratio) {
  return ratio > 1 && ratio <= data_spec::max_ratio;
}

result<void> check_dedupe(double pct) {
  if (!(pct >= 0 && pct <= 100)) return failure("dedupe percentage {:g} is outside [0, 100]", pct);
  return {};
}

// A caller's bug (check() refuses the spec): the nearest valid one.
data_spec validated(data_spec spec) {
  if (spec.check()) return spec;
  if (spec.kind == data_kind::compressible && !ratio_in_range(spec.ratio)) spec.ratio = 2;
  if (!check_dedupe(spec.dedupe_pct)) spec.dedupe_pct = 0;
  return spec;
}

void write_random(uint64_t stream, uint8_t* dst, size_t words) {
  for (size_t i = 0; i < words; ++i) store_le64(dst + 8 * i, wyrand_at(stream += wyrand_step));
}

}  // namespace

result<void> data_spec::check() const {
  if (kind == data_kind::compressible && !ratio_in_range(ratio))
    return bad_ratio(fmt::format("{:g}", ratio));
  return check_dedupe(dedupe_pct);
}

result<data_spec> data_spec::parse(std::string_view text, double dedupe_pct, uint64_t seed) {
  constexpr std::string_view compress_prefix = "compress:";
  data_spec spec;
  spec.dedupe_pct = dedupe_pct;
  spec.seed = seed;
  if (text == "zero") {
    spec.kind = data_kind::zero;
  } else if (text == "random") {
    spec.kind = data_kind::random;
  } else if (text.starts_with(compress_prefix)) {
    std::string_view number = text.substr(compress_prefix.size());
    spec.kind = data_kind::compressible;
    auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), spec.ratio);
    if (error != std::errc() || end != number.data() + number.size() || !ratio_in_range(spec.ratio))
      return bad_ratio(fmt::format("{:?}", number));
  } else {
    return failure("unknown data kind {:?}: expected zero, random or compress:RATIO", text);
  }
  FSRR_TRY(check_dedupe(dedupe_pct));
  return spec;
}

std::string data_spec::describe() const {
  std::string kind_text = kind == data_kind::zero     ? "zero"
                          : kind == data_kind::random ? "random"
                                                      : fmt::format("compress:{:.2f}", ratio);
  return fmt::format("{} dedupe:{:g}% seed:{}", kind_text, dedupe_pct, seed);
}

struct data_source::impl {
  data_spec spec;
  uint64_t dedupe_threshold;  // a unit is deduped when 32 bits of its hash fall below this
  uint64_t shared_base;
  std::optional<compressible_pool> pool;

  explicit impl(const data_spec& s)
      : spec(s),
        dedupe_threshold(static_cast<uint64_t>(std::ldexp(s.dedupe_pct / 100, 32))),
        shared_base(mix64(~s.seed, shared_salt)) {
    if (s.kind == data_kind::compressible) pool.emplace(s.seed, s.ratio);
  }

  // Writes the whole dedupe unit `unit` of the file whose hash is `file`.
  void write_unit(uint64_t file, uint64_t unit, uint8_t* dst) const {
    uint64_t hash = mix64(file, unit);
    uint64_t index = unit % units_per_chunk;
    uint64_t draw = mix64(hash ^ dedupe_salt);
    bool shared = (draw >> 32) < dedupe_threshold;
    uint64_t variant = (draw & 0xffffffff) % shared_variants;
    uint64_t stream = shared ? mix64(shared_base, index * shared_variants + variant) : hash;
    if (spec.kind == data_kind::random) {
      write_random(stream, dst, unit_bytes / 8);
      return;
    }
    // Every unit of a file chunk comes from the same page at the same place, so the chunk keeps
    // the page's calibrated ratio; the stamp keeps units of different files apart.
    uint64_t page =
        shared ? variant : mix64(file ^ page_salt, unit / units_per_chunk) % pool->pages;
    std::memcpy(dst, pool->block(page, index), unit_bytes);
    write_random(stream, dst, compressible_pool::stamp_bytes / 8);
  }
};

data_source::data_source(const data_spec& spec)
    : impl_(std::make_unique<const impl>(validated(spec))) {}

data_source::~data_source() = default;

const data_spec& data_source::spec() const {
  return impl_->spec;
}

void data_source::fill(uint64_t key, uint64_t offset, std::span<uint8_t> out) const {
  if (out.empty()) return;  // an empty span may have no data() at all
  if (impl_->spec.kind == data_kind::zero) {
    std::memset(out.data(), 0, out.size());
    return;
  }
  uint64_t file = mix64(impl_->spec.seed, key);
  uint8_t* dst = out.data();
  size_t left = out.size();
  while (left > 0) {
    uint64_t unit = offset / unit_bytes;
    size_t skip = offset % unit_bytes;
    size_t n = std::min(unit_bytes - skip, static_cast<uint64_t>(left));
    if (n == unit_bytes) {
      impl_->write_unit(file, unit, dst);
    } else {
      // A unit cut by the range: make it whole, keep the part asked for, so the bytes never
      // depend on how a range is split.
      alignas(64) uint8_t whole[unit_bytes];
      impl_->write_unit(file, unit, whole);
      std::memcpy(dst, whole + skip, n);
    }
    dst += n;
    left -= n;
    offset += n;
  }
}

data_source::ratios data_source::measure(uint64_t sample_bytes) const {
  // The sample: files of 1 MiB from key 0 up, at least one chunk in all.
  constexpr uint64_t file_bytes = 8 * chunk_bytes;
  uint64_t total =
      std::max<uint64_t>(1, (sample_bytes + chunk_bytes - 1) / chunk_bytes) * chunk_bytes;
  chunk_compressor compressor(/*with_lzo=*/true);
  std::vector<uint8_t> buffer(file_bytes);
  for (uint64_t key = 0, done = 0; done < total; ++key, done += file_bytes) {
    std::span<uint8_t> part(buffer.data(), std::min(file_bytes, total - done));
    fill(key, 0, part);
    compressor.add(part);
  }
  return {compressor.sizes().zstd_ratio(), compressor.sizes().lzo_ratio()};
}

}  // namespace fsrr
