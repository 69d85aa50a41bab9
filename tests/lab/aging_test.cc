// Aging's parts that need no file system: the profile's syntax, the size distributions, the
// layout score.
#include "aging.h"

#include <catch2/catch.hpp>
#include <map>

namespace fsrr::lab {

TEST_CASE("age profiles: fill, churn, sizes and seed, anything else refused in one line") {
  const auto p = parse_age_profile("fill=70,churn=3,sizes=home,seed=9");
  REQUIRE(p);
  CHECK(p->fill == Approx(0.70));
  CHECK(p->churn == 3);
  CHECK(p->sizes == "home");
  CHECK(p->seed == 9);
  CHECK(parse_age_profile("none")->fill == 0);
  CHECK(parse_age_profile("fill=50")->sizes == "backup");
  CHECK(parse_age_profile("churn=2").error().message ==
        "--age churn=2: fill=PCT (or replay=TRACE) is needed");
  CHECK(parse_age_profile("fill=99").error().message == "--age fill=99: fill=PCT takes 1 to 98");
  CHECK(parse_age_profile("fill=50,sizes=huge").error().message ==
        "--age fill=50,sizes=huge: sizes=huge: backup, home, maildir, mixed or trace:FILE");
  CHECK(!parse_age_profile("fill=50,colour=blue"));
  CHECK(!parse_age_profile("fill=50,seed=x"));
}

TEST_CASE("age profiles: replay=TRACE with rounds and keep, alone") {
  const std::string trace = std::string(SOURCE_DIR) + "/traces/seed000-rsync.trace";
  const auto p = parse_age_profile("replay=" + trace + ",rounds=10,keep=3,seed=4");
  REQUIRE(p);
  CHECK(p->replay == trace);
  CHECK(p->rounds == 10);
  CHECK(p->keep == 3);
  CHECK(p->seed == 4);
  CHECK(p->fill == 0);
  CHECK(p->aged());
  CHECK(parse_age_profile("replay=" + trace)->rounds == 1);
  CHECK(!parse_age_profile("none")->aged());
  CHECK(parse_age_profile("replay=/nonexistent,rounds=2").error().message ==
        "--age replay=/nonexistent,rounds=2: replay=TRACE names no trace file");
  CHECK(parse_age_profile("fill=50,replay=" + trace).error().message ==
        "--age fill=50,replay=" + trace + ": replay=TRACE ages by replaying, without fill, churn or sizes");
  CHECK(parse_age_profile("fill=50,rounds=2").error().message ==
        "--age fill=50,rounds=2: rounds and keep go with replay=TRACE");
  CHECK(parse_age_profile("replay=" + trace + ",keep=0").error().message ==
        "--age replay=" + trace + ",keep=0: keep=N takes 1 to 10000");
}

TEST_CASE("size distributions: the seed tree's four sizes in its proportions, others in their ranges") {
  const auto backup = size_distribution::named("backup");
  REQUIRE(backup);
  std::map<uint64_t, int> seen;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 111100; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift
    ++seen[backup->draw(x)];
  }
  REQUIRE(seen.size() == 4);
  CHECK(seen[1024] == Approx(100000).epsilon(0.02));
  CHECK(seen[4096] == Approx(10000).epsilon(0.05));
  CHECK(seen[10240] == Approx(1000).epsilon(0.15));
  CHECK(seen[1024000] == Approx(100).epsilon(0.35));
  const auto maildir = size_distribution::named("maildir");
  for (int i = 0; i < 10000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const uint64_t s = maildir->draw(x);
    REQUIRE(s >= 2048);
    REQUIRE(s <= 65536);
  }
  CHECK(maildir->draw(12345) == maildir->draw(12345));  // a number, one size
}

TEST_CASE("layout score: the share of blocks that follow their predecessor on disk") {
  layout_stats s;
  add_extents(s, {{0, 4 * 4096}, {4 * 4096, 4 * 4096}});  // 8 blocks in a row
  CHECK(s.score() == 1.0);
  CHECK(s.extents_per_file() == 2.0);
  add_extents(s, {{1 << 20, 4 * 4096}, {2 << 20, 4 * 4096}});  // 8 blocks, one jump
  // pairs 7 + 7, contiguous 7 + 6
  CHECK(s.pairs == 14);
  CHECK(s.contiguous == 13);
  CHECK(s.score() == Approx(13.0 / 14.0));
  add_extents(s, {{8 << 20, 4096}});  // one block: no pair
  CHECK(s.pairs == 14);
  CHECK(s.files == 3);
  CHECK(s.blocks == 17);
}

}  // namespace fsrr::lab
