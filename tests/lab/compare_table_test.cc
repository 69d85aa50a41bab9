// The terminal table of a compare: what a person reads first.
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "compare.h"

namespace {

nlohmann::json row(const std::string& name, double mib, uint64_t space) {
  return {{"name", name},
          {"mib_per_s", {{"median", mib}, {"min", mib - 1}, {"max", mib + 1}}},
          {"files_per_s", {{"median", 1000.0}}},
          {"wall_ns", {{"median", 2.5e9}}},
          {"sync_ns", {{"median", 0.125e9}}},
          {"space_used_bytes", space},
          {"mismatches", 0},
          {"differences", {{"renameat", 2}, {"copy_file_range", 3}}},
          {"verify", true},
          {"ops", {{"openat", {{"latency_ns", {{"p50", 1500}, {"p99", 9000}}}}}}}};
}

std::vector<std::string> lines(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("the compare table: one line per file system with its medians, spread and counts",
          "[lab][table]") {
  nlohmann::json result = {{"fs", {row("ext4", 34.5, 27ull << 20), row("btrfs", 6.25, 3ull << 20)}}};
  const auto t = lines(fsrr::lab::compare_table(result));
  REQUIRE(t.size() == 3);
  CHECK(t[0].find("fsync") == std::string::npos);  // no syncs in the trace: no sync columns
  CHECK(t[1] ==
        "ext4                          34.5       (33.5-35.5)       1000     2.500     0.125"
        "        27.0       0      5  yes");
  CHECK(t[2].rfind("btrfs                          6.2", 0) == 0);
}

TEST_CASE("a trace with fsync shows its p50 and p99 per file system, and a row without it a dash",
          "[lab][table]") {
  nlohmann::json with = row("ext4", 10, 1 << 20), without = row("tmpfs", 50, 1 << 20);
  with["ops"]["fsync"] = {{"latency_ns", {{"p50", 812300}, {"p99", 2500000}}}};
  const auto t = lines(fsrr::lab::compare_table({{"fs", {with, without}}}));
  REQUIRE(t.size() == 3);
  CHECK(t[0].find("fsync p50 us   p99 us  verify") != std::string::npos);
  CHECK(t[0].find("fdatasync") == std::string::npos);
  CHECK(t[1].find("     812.3   2500.0  yes") != std::string::npos);
  CHECK(t[2].find("  -        -  yes") != std::string::npos);
}

TEST_CASE("a timed compare shows how late each file system replayed and how much its ops forced",
          "[lab][table]") {
  nlohmann::json slow = row("ext4", 10, 1 << 20), fast = row("tmpfs", 50, 1 << 20);
  slow["lateness_ns"] = {{"p50", 2000}, {"p99", 12'340'000}, {"max", 20'000'000}};
  slow["op_bound_lateness_ns"] = {{"p50", 0}, {"p99", 11'800'000}, {"max", 19'000'000}};
  const auto t = lines(fsrr::lab::compare_table({{"fs", {slow, fast}}}));
  REQUIRE(t.size() == 3);
  CHECK(t[0].find("   late p99 ms  ops alone  verify") != std::string::npos);
  CHECK(t[1].find("         12.34      11.80  yes") != std::string::npos);
  CHECK(t[2].find("             -          -  yes") != std::string::npos);
  // an afap compare has neither, and no columns for them
  CHECK(lines(fsrr::lab::compare_table({{"fs", {fast}}}))[0].find("late") == std::string::npos);
}

TEST_CASE("a row compared against a baseline says by how much, and SLOWER when beyond its spread",
          "[lab][table]") {
  nlohmann::json r = row("xfs", 20, 1 << 20);
  r["baseline"] = {{"mib_per_s", 25.0}, {"mib_per_s_change", -0.2}, {"slower", true}};
  const auto t = lines(fsrr::lab::compare_table({{"fs", {r}}}));
  REQUIRE(t.size() == 2);
  CHECK(t[1].substr(t[1].size() - 32) == "yes  -20.0% vs baseline (SLOWER)");
}
