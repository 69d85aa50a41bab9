#include "data_source.h"
#include "chunk_compressor.h"
#include "trace_error.h"

#include <zstd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fsrr {
namespace {

using bytes = std::vector<uint8_t>;

constexpr size_t unit = data_source::dedupe_unit_bytes;
constexpr size_t chunk = data_source::chunk_bytes;

bytes fill(const data_source& source, uint64_t key, uint64_t offset, size_t size) {
  bytes out(size);
  source.fill(key, offset, out);
  return out;
}

bytes concat(bytes a, const bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string_view unit_at(const bytes& data, size_t index) {
  return {reinterpret_cast<const char*>(data.data()) + index * unit, unit};
}

// Aligned 4 KiB units of `files` by content hash. A 64-bit hash collision among 20k units has a
// chance of ~1e-11, too small to make a count wrong.
std::unordered_map<size_t, size_t> units_by_content(const std::vector<bytes>& files) {
  std::unordered_map<size_t, size_t> seen;
  for (const bytes& file : files) {
    for (size_t i = 0; i < file.size() / unit; ++i) {
      ++seen[std::hash<std::string_view>{}(unit_at(file, i))];
    }
  }
  return seen;
}

// Units whose content occurs more than once, each occurrence counted.
size_t repeated_units(const std::vector<bytes>& files) {
  size_t repeated = 0;
  for (auto [hash, count] : units_by_content(files)) {
    if (count > 1) repeated += count;
  }
  return repeated;
}

std::vector<bytes> many_files(const data_source& source, size_t files, size_t size) {
  std::vector<bytes> out;
  for (size_t key = 0; key < files; ++key) out.push_back(fill(source, 1000 + key, 0, size));
  return out;
}

double zstd3_ratio(const bytes& data) {
  bytes out(ZSTD_compressBound(data.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  REQUIRE_FALSE(ZSTD_isError(n));
  return static_cast<double>(data.size()) / static_cast<double>(n);
}

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const trace_error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

data_spec spec(std::string_view text, double dedupe_pct = 0, uint64_t seed = 1) {
  return or_throw(data_spec::parse(text, dedupe_pct, seed));
}

TEST_CASE("a range filled in pieces equals the range filled at once") {
  data_source source(spec(GENERATE("random", "compress:2"), 30, 7));
  const uint64_t start = 12345;
  bytes whole = fill(source, 9, start, 50000);
  for (size_t split : {1, 3000, 4095, 4096, 4097, 20000, 49999}) {
    INFO("split at " << split);
    CHECK(concat(fill(source, 9, start, split), fill(source, 9, start + split, 50000 - split)) ==
          whole);
  }
  CHECK(concat(fill(source, 9, 0, 3000), fill(source, 9, 3000, 7000)) == fill(source, 9, 0, 10000));
}

TEST_CASE("two sources of the same spec give the same bytes") {
  data_spec same = spec(GENERATE("random", "compress:3"), 40, 11);
  data_source first(same);
  data_source second(same);
  CHECK(fill(first, 42, 7, 1 << 20) == fill(second, 42, 7, 1 << 20));
}

TEST_CASE("different files give different bytes, unit by unit") {
  data_source source(spec(GENERATE("random", "compress:5")));
  bytes a = fill(source, 1, 0, 32 * unit);
  bytes b = fill(source, 2, 0, 32 * unit);
  CHECK(units_by_content({a, b}).size() == 64);
}

TEST_CASE("different seeds give different bytes, unit by unit") {
  std::string kind = GENERATE("random", "compress:5");
  data_source one(spec(kind, 0, 1));
  data_source two(spec(kind, 0, 2));
  CHECK(units_by_content({fill(one, 5, 0, 32 * unit), fill(two, 5, 0, 32 * unit)}).size() == 64);
}

TEST_CASE("zero data is all zeros, deduped or not") {
  data_source source(spec("zero", GENERATE(0.0, 50.0)));
  bytes data = fill(source, 3, 777, 300000);
  CHECK(std::count(data.begin(), data.end(), 0) == 300000);
}

TEST_CASE("every 128 KiB chunk of compressible data reaches the zstd-3 ratio within 10%") {
  double target = GENERATE(1.5, 2.0, 3.0, 5.0);
  uint64_t seed = GENERATE(1, 424242);
  data_source source(spec("compress:" + std::to_string(target), 0, seed));
  double lowest = INFINITY;
  double highest = 0;
  // Keys and offsets the calibration never saw.
  for (uint64_t key = 5000; key < 5032; ++key) {
    for (uint64_t c = 3; c < 5; ++c) {
      double ratio = zstd3_ratio(fill(source, key, c * chunk, chunk));
      lowest = std::min(lowest, ratio);
      highest = std::max(highest, ratio);
    }
  }
  INFO("target " << target << " seed " << seed << ", chunks from " << lowest << " to " << highest);
  CHECK(lowest >= 0.9 * target);
  CHECK(highest <= 1.1 * target);
}

TEST_CASE("deduped units keep the compressible ratio") {
  data_source source(spec("compress:3", 50));
  bytes sample;
  for (uint64_t key = 0; key < 32; ++key) sample = concat(sample, fill(source, key, 0, chunk));
  double lowest = INFINITY;
  double highest = 0;
  for (size_t at = 0; at < sample.size(); at += chunk) {
    double ratio = zstd3_ratio(bytes(sample.begin() + at, sample.begin() + at + chunk));
    lowest = std::min(lowest, ratio);
    highest = std::max(highest, ratio);
  }
  CHECK(lowest >= 0.9 * 3);
  CHECK(highest <= 1.1 * 3);
}

TEST_CASE("measure reports the zstd ratio achieved and lzo's next to it") {
  data_source source(spec("compress:3"));
  data_source::ratios achieved = source.measure(4 << 20);
  CHECK(achieved.zstd >= 0.9 * 3);
  CHECK(achieved.zstd <= 1.1 * 3);
  // lzo has no entropy stage, so the 6-bit literals that help zstd do not help it.
  CHECK(achieved.lzo > 1.5);
  CHECK(achieved.lzo < achieved.zstd);
}

TEST_CASE("a compressor without lzo reports no lzo ratio, not a ratio of 1") {
  chunk_compressor without(/*with_lzo=*/false), with(/*with_lzo=*/true);
  const std::vector<uint8_t> zeros(3 * chunk_compressor::chunk_bytes, 0);
  without.add(zeros);
  with.add(zeros);
  CHECK_FALSE(without.sizes().lzo_measured);
  CHECK(without.sizes().lzo_ratio() == 0.0);
  CHECK(with.sizes().lzo_measured);
  CHECK(with.sizes().lzo_ratio() > 50);  // zeros: a few hundred bytes a chunk
  CHECK(with.sizes().zstd_ratio() == without.sizes().zstd_ratio());
}

TEST_CASE("random data does not compress: measure reports exactly 1") {
  data_source::ratios achieved = data_source(spec("random")).measure(4 << 20);
  CHECK(achieved.zstd == 1.0);
  CHECK(achieved.lzo == 1.0);
}

// 40 files of 512 units: 20,480 units, each deduped with probability 1/2 on its own, so the
// deduped share has a standard deviation of 0.35%; 45-55% is 14 of them. The 10k deduped units
// are spread over 256 shared blocks, about 40 copies each, so every deduped unit repeats.
TEST_CASE("with dedupe 50, half of the 4 KiB units across many files repeat") {
  data_source source(spec(GENERATE("random", "compress:2"), 50));
  std::vector<bytes> files = many_files(source, 40, 512 * unit);
  double share = static_cast<double>(repeated_units(files)) / (40 * 512);
  INFO("repeated share " << share);
  CHECK(share >= 0.45);
  CHECK(share <= 0.55);
}

TEST_CASE("without dedupe no 4 KiB unit repeats, across files and offsets") {
  data_source source(spec(GENERATE("random", "compress:5")));
  CHECK(repeated_units(many_files(source, 40, 512 * unit)) == 0);
}

// 16 MiB at dedupe 100 puts 128 units on each chunk position, spread over its 8 shared blocks: a
// block goes unused with a chance of (7/8)^128 = 4e-8.
TEST_CASE("shared blocks are the same for every file and source of a seed, and differ by seed") {
  data_source first(spec("random", 100, 1));
  data_source again(spec("random", 100, 1));
  data_source other_seed(spec("random", 100, 2));
  auto one_seed = units_by_content({fill(first, 1, 0, 8 << 20), fill(again, 2, 0, 8 << 20)});
  CHECK(one_seed.size() == 256);
  for (auto [hash, count] : units_by_content({fill(other_seed, 1, 0, 4 << 20)})) {
    CHECK(one_seed.count(hash) == 0);
  }
}

TEST_CASE("fill may be called from several threads at once") {
  data_source source(spec("compress:2", 20));
  constexpr size_t part = 1 << 20;
  bytes together(4 * part);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back(
        [&, t] { source.fill(8, t * part, std::span<uint8_t>(together).subspan(t * part, part)); });
  }
  for (auto& thread : threads) thread.join();
  CHECK(together == fill(source, 8, 0, 4 * part));
}

TEST_CASE("parse reads zero, random and compress:RATIO") {
  data_spec zero = or_throw(data_spec::parse("zero"));
  CHECK(zero.kind == data_kind::zero);
  CHECK(zero.dedupe_pct == 0);
  CHECK(zero.seed == 0);

  data_spec random = or_throw(data_spec::parse("random", 25, 9));
  CHECK(random.kind == data_kind::random);
  CHECK(random.dedupe_pct == 25);
  CHECK(random.seed == 9);

  data_spec compress = or_throw(data_spec::parse("compress:2.5", 100));
  CHECK(compress.kind == data_kind::compressible);
  CHECK(compress.ratio == 2.5);
  CHECK(compress.dedupe_pct == 100);
  CHECK(or_throw(data_spec::parse("compress:20")).ratio == 20);
  CHECK(or_throw(data_spec::parse("compress:1.01")).ratio == 1.01);
}

TEST_CASE("parse refuses any other data text with one line naming it") {
  std::string text =
      GENERATE("", "zeros", "Random", " random", "compress", "compress:", "compress:1",
               "compress:0.5", "compress:-3", "compress:20.5", "compress:abc", "compress:2x",
               "compress: 2", "compress:nan", "compress:inf", "compress:2\n");
  INFO("text \"" << text << "\"");
  std::string message = message_of([&] { or_throw(data_spec::parse(text)); });
  CHECK(message != "(nothing thrown)");
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("parse refuses a dedupe percentage outside [0, 100]") {
  double pct = GENERATE(-1.0, 100.5, NAN);
  CHECK_FALSE(data_spec::parse("random", pct));
}

TEST_CASE("check refuses a spec that parse would refuse") {
  data_spec bad;
  bad.kind = data_kind::compressible;
  bad.ratio = 0.5;
  CHECK(message_of([&] { or_throw(bad.check()); }) ==
        "compress ratio 0.5 is not a number in (1, 20]");
  bad.kind = data_kind::random;
  CHECK(bad.check());  // a ratio only matters for compressible data
  bad.dedupe_pct = 101;
  CHECK(message_of([&] { or_throw(bad.check()); }) == "dedupe percentage 101 is outside [0, 100]");
}

TEST_CASE("the messages say what was wrong and what is expected") {
  CHECK(message_of([] { or_throw(data_spec::parse("zeros")); }) ==
        "unknown data kind \"zeros\": expected zero, random or compress:RATIO");
  CHECK(message_of([] { or_throw(data_spec::parse("compress:abc")); }) ==
        "compress ratio \"abc\" is not a number in (1, 20]");
  CHECK(message_of([] { or_throw(data_spec::parse("zero", 150)); }) ==
        "dedupe percentage 150 is outside [0, 100]");
}

TEST_CASE("describe names the kind, ratio, dedupe share and seed") {
  CHECK(or_throw(data_spec::parse("compress:2", 30, 7)).describe() ==
        "compress:2.00 dedupe:30% seed:7");
  CHECK(or_throw(data_spec::parse("random")).describe() == "random dedupe:0% seed:0");
  CHECK(or_throw(data_spec::parse("zero", 12.5, 3)).describe() == "zero dedupe:12.5% seed:3");
}

}  // namespace
}  // namespace fsrr
