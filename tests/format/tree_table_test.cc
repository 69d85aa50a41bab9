// The reader's initial-tree table: every field of every entry comes back as pushed, whether
// read by index or by iteration, across groups and chunks, at the ends of each field's range.
#include <climits>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "tree_table.h"

using namespace fsrr;

namespace {

// Entries as a copy's source has them (one mode and owner, sizes and times in a run), with
// every so often one at the ends of the fields' ranges, a sparse file and one with xattrs.
std::vector<tree_entry> sample(size_t n) {
  std::mt19937_64 rng(42);
  std::vector<tree_entry> v;
  int64_t t = 1'700'000'000'123'456'789;
  for (size_t i = 0; i < n; ++i) {
    tree_entry e;
    e.path = static_cast<path_id>(i + 7);
    e.file = static_cast<file_id>(i % 3 == 0 ? no_id : i * 2 + 1);
    e.mode = i % 50 == 0 ? 040755 : 0100644;
    e.uid = e.gid = 1000;
    e.size = 1024;
    e.allocated = 4096;
    t += static_cast<int64_t>(rng() % 100'000);
    e.mtime_ns = t;
    e.atime_ns = t + 5;
    e.ctime_ns = t + 1'000'000'000;
    if (i % 97 == 3) {  // the far ends
      e.path = UINT32_MAX;
      e.file = 0;
      e.mode = UINT32_MAX;
      e.uid = UINT32_MAX;
      e.gid = 0;
      e.size = UINT64_MAX;
      e.allocated = 0;
      e.mtime_ns = INT64_MIN;
      e.atime_ns = INT64_MAX;
      e.ctime_ns = -1;
      e.nlink = UINT32_MAX;
      e.link_group = UINT32_MAX;
      e.target = UINT32_MAX;
    }
    if (i % 89 == 5) {
      e.size = rng();
      e.allocated = rng();
      e.mtime_ns = static_cast<int64_t>(rng());
      e.atime_ns = static_cast<int64_t>(rng());
      e.ctime_ns = static_cast<int64_t>(rng());
      e.nlink = 2;
      e.link_group = 9;
    }
    if (i % 101 == 7) e.extents = {{0, 4096}, {1 << 20, 8192}};
    if (i % 103 == 11) e.xattrs = {{3, 17}, {4, 0}};
    v.push_back(e);
  }
  return v;
}

}  // namespace

TEST_CASE("tree entries come back as pushed by index and by iteration") {
  const size_t n = GENERATE(0u, 1u, 15u, 16u, 17u, 100'000u);
  const std::vector<tree_entry> want = sample(n);
  tree_table t;
  for (const tree_entry& e : want) t.push_back(e);
  REQUIRE(t.size() == n);
  CHECK(t.empty() == (n == 0));
  size_t i = 0;
  for (const tree_entry e : t) {
    REQUIRE(i < n);
    CHECK(e == want[i]);
    ++i;
  }
  CHECK(i == n);
  std::mt19937 rng(7);
  for (int k = 0; k < 2000 && n > 0; ++k) {
    const size_t j = rng() % n;
    CHECK(t[j] == want[j]);
  }
  if (n > 0) {
    CHECK(t[0] == want[0]);
    CHECK(t[n - 1] == want[n - 1]);
  }
}

TEST_CASE("a copy's source tree takes about a third of its fields' 80 bytes an entry") {
  const std::vector<tree_entry> want = sample(100'000);
  tree_table t;
  for (const tree_entry& e : want) t.push_back(e);
  // ~26 bytes an entry for the run (path, file and time differences, mode and owner the
  // same), some more for the ones at the ends of the ranges; whole chunks of 256 KiB.
  CHECK(t.encoded_bytes() < 100'000 * 28);
  CHECK(t.encoded_bytes() > 100'000 * 12);
}
