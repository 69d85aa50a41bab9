// Cross-thread ordering: which earlier ops an op waits for.
#include <thread>

#include <catch2/catch.hpp>

#include "ordering.h"

using namespace fsrr;

namespace {

constexpr uint64_t file_a = order_key(order_kind::file, 1);
constexpr uint64_t file_b = order_key(order_kind::file, 2);

struct fixture {
  progress_counter lane1, lane2, lane3;
  order_tracker order;
  dep_list deps;

  // Adds op `index` of `lane` over [ts, end] on `key`; returns its dependencies.
  std::vector<std::pair<const progress_counter*, uint32_t>> add(progress_counter& lane,
                                                                uint32_t index, uint64_t ts,
                                                                uint64_t end, uint64_t key) {
    deps.clear();
    const uint64_t keys[] = {key};
    order.add(&lane, index, ts, end, keys, deps);
    std::vector<std::pair<const progress_counter*, uint32_t>> v;
    for (size_t i = 0; i < deps.size(); ++i) v.emplace_back(deps[i].lane, deps[i].count);
    return v;
  }
};

using dep = std::pair<const progress_counter*, uint32_t>;

}  // namespace

TEST_CASE("an op waits for an op of another thread on the same file that ended before it") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, file_a);
  CHECK(f.add(f.lane2, 0, 300, 400, file_a) == std::vector<dep>{{&f.lane1, 1}});
}

TEST_CASE("an op does not wait for ops on other files") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, file_a);
  CHECK(f.add(f.lane2, 0, 300, 400, file_b).empty());
}

TEST_CASE("ops that overlapped in the recording do not wait for each other") {
  fixture f;
  f.add(f.lane1, 0, 100, 500, file_a);
  CHECK(f.add(f.lane2, 0, 300, 400, file_a).empty());
}

TEST_CASE("an op never depends on its own thread: program order covers that") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, file_a);
  CHECK(f.add(f.lane1, 1, 300, 400, file_a).empty());
}

TEST_CASE("an op waits only for the latest of a chain, which waits for the rest") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, file_a);
  f.add(f.lane2, 0, 300, 400, file_a);
  CHECK(f.add(f.lane3, 0, 500, 600, file_a) == std::vector<dep>{{&f.lane2, 1}});
}

TEST_CASE("an op waits for every ended op that overlapped the others") {
  fixture f;
  f.add(f.lane1, 0, 100, 300, file_a);
  f.add(f.lane2, 0, 200, 400, file_a);
  const auto deps = f.add(f.lane3, 0, 500, 600, file_a);
  CHECK(deps.size() == 2);
  CHECK(std::count(deps.begin(), deps.end(), dep{&f.lane1, 1}) == 1);
  CHECK(std::count(deps.begin(), deps.end(), dep{&f.lane2, 1}) == 1);
}

TEST_CASE("an op does not wait for ops already finished in the replay") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, file_a);
  f.lane1.advance();
  CHECK(f.add(f.lane2, 0, 300, 400, file_a).empty());
}

TEST_CASE("a key marked order_all waits even for overlapping ops") {
  fixture f;
  f.add(f.lane1, 0, 100, 500, file_a);
  CHECK(f.add(f.lane2, 0, 300, 400, file_a | order_all) == std::vector<dep>{{&f.lane1, 1}});
}

constexpr uint64_t dir_d = order_key(order_kind::path, 7);

TEST_CASE("a key marked order_race waits for overlapping ops on the key, not on names in it") {
  fixture f;
  f.add(f.lane1, 0, 100, 500, dir_d);                  // mkdir d, still running
  f.add(f.lane3, 0, 150, 450, dir_d | order_shared);  // a create in d, overlapping too
  // the mkdir of d that met EEXIST waits for the mkdir, not for the create in it
  CHECK(f.add(f.lane2, 0, 300, 400, dir_d | order_race) == std::vector<dep>{{&f.lane1, 1}});
}

TEST_CASE("ops that only share a directory do not wait for each other") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, dir_d | order_shared);
  CHECK(f.add(f.lane2, 0, 300, 400, dir_d | order_shared).empty());
}

TEST_CASE("an op on a name waits for the op on its directory that ended before it") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, dir_d);
  CHECK(f.add(f.lane2, 0, 300, 400, dir_d | order_shared) == std::vector<dep>{{&f.lane1, 1}});
}

TEST_CASE("an op on a directory waits for every op on a name in it that ended before it") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, dir_d | order_shared);
  f.add(f.lane2, 0, 150, 250, dir_d | order_shared);
  const auto deps = f.add(f.lane3, 0, 300, 400, dir_d);
  CHECK(deps.size() == 2);
  CHECK(std::count(deps.begin(), deps.end(), dep{&f.lane1, 1}) == 1);
  CHECK(std::count(deps.begin(), deps.end(), dep{&f.lane2, 1}) == 1);
}

TEST_CASE("an op on a directory waits for a lane's latest name op that ended, not a running one") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, dir_d | order_shared);
  f.add(f.lane1, 1, 250, 1000, dir_d | order_shared);
  CHECK(f.add(f.lane2, 0, 300, 400, dir_d) == std::vector<dep>{{&f.lane1, 1}});
}

TEST_CASE("name ops before an ended op on their directory are waited for through it") {
  fixture f;
  f.add(f.lane1, 0, 100, 200, dir_d | order_shared);
  f.add(f.lane2, 0, 300, 400, dir_d);
  CHECK(f.add(f.lane3, 0, 500, 600, dir_d) == std::vector<dep>{{&f.lane2, 1}});
}

TEST_CASE("dependencies on one lane collapse to the latest op") {
  dep_list d;
  progress_counter lane;
  d.add({&lane, 3});
  d.add({&lane, 7});
  d.add({&lane, 5});
  REQUIRE(d.size() == 1);
  CHECK(d[0].count == 7);
}

TEST_CASE("more dependencies than fit inline are all kept") {
  dep_list d;
  std::vector<progress_counter> lanes(10);
  for (auto& l : lanes) d.add({&l, 1});
  CHECK(d.size() == 10);
}

TEST_CASE("a waiter wakes when another thread advances the counter") {
  progress_counter c;
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    c.advance(2);
  });
  c.wait(2, stop);
  CHECK(c.reached(2));
  t.join();
}

TEST_CASE("a waiter returns when stop is set even if the count never comes") {
  progress_counter c;
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
  });
  c.wait(5, stop);
  CHECK_FALSE(c.reached(5));
  t.join();
}

TEST_CASE("counts compare correctly across wrap-around") {
  progress_counter c;
  c.value = 0xFFFFFFFEu;
  CHECK_FALSE(c.reached(1));
  c.advance(3);
  CHECK(c.reached(1));
}

TEST_CASE("finished entries are dropped so the tracker stays small") {
  fixture f;
  for (uint32_t i = 0; i < 20000; ++i) {
    f.add(f.lane1, i, i * 10, i * 10 + 5, order_key(order_kind::path, i + 1));
    f.lane1.advance();
  }
  CHECK(f.order.tracked_keys() < 10000);
}
