// Speed of the replay data generator on one core, and the ratios its compressible data reaches.
// fill() writes into a 1 MiB buffer, as replay fills its write buffer, so the figures are the
// generator's, not the memory bus's.
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "data_source.h"
#include "trace_error.h"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// Fills until at least `min_seconds` have passed; returns GB/s.
double fill_speed(const fsrr::data_source& source, double min_seconds) {
  std::vector<uint8_t> buffer(1 << 20);
  uint64_t filled = 0;
  auto start = clock_type::now();
  double elapsed = 0;
  for (uint64_t key = 0; elapsed < min_seconds; ++key) {
    for (uint64_t offset = 0; offset < (64ull << 20); offset += buffer.size()) {
      source.fill(key, offset, buffer);
      filled += buffer.size();
    }
    elapsed = seconds_since(start);
  }
  return static_cast<double>(filled) / elapsed / 1e9;
}

}  // namespace

int main() {
  struct run {
    std::string data;
    double dedupe_pct;
  };
  const run runs[] = {{"zero", 0},         {"random", 0},      {"random", 50},
                      {"compress:1.5", 0}, {"compress:2", 0},  {"compress:3", 0},
                      {"compress:5", 0},   {"compress:10", 0}, {"compress:2", 50}};
  fmt::print("{:<32} {:>8} {:>9} {:>8} {:>9}\n", "data", "GB/s", "setup ms", "zstd-3", "lzo1x-1");
  for (const run& r : runs) {
    auto start = clock_type::now();
    fsrr::data_source source(fsrr::or_throw(fsrr::data_spec::parse(r.data, r.dedupe_pct, 1)));
    double setup_ms = seconds_since(start) * 1e3;
    double speed = fill_speed(source, 1.0);
    fsrr::data_source::ratios achieved = source.measure(32ull << 20);
    fmt::print("{:<32} {:>8.2f} {:>9.0f} {:>8.2f} {:>9.2f}\n", source.spec().describe(), speed,
               setup_ms, achieved.zstd, achieved.lzo);
  }
}
