// The queue that hands one replay thread its ops: order, segments, a consumer on another thread.
#include <thread>

#include <catch2/catch.hpp>

#include "lane_queue.h"

using namespace fsrr;

namespace {

const std::atomic<bool> never{false};

}  // namespace

TEST_CASE("a lane queue hands out items in order across many segments") {
  lane_queue<int> q;
  auto at = q.start();
  for (int i = 0; i < 1000; ++i) {
    q.slot() = i;
    q.publish();
  }
  for (int i = 0; i < 1000; ++i) {
    CHECK(q.next(at, never) == i);
    q.finished(at);
  }
  CHECK(q.done.reached(1000));
}

TEST_CASE("a lane queue reuses a segment once its consumer is past it") {
  lane_queue<int> q;
  auto at = q.start();
  int* first = &q.slot();
  for (int i = 0; i < 300; ++i) {
    q.slot() = i;
    q.publish();
    q.next(at, never);
    q.finished(at);
  }
  bool reused = false;
  for (int i = 0; i < 300 && !reused; ++i) {
    reused = &q.slot() == first;
    q.publish();
    q.next(at, never);
    q.finished(at);
  }
  CHECK(reused);
}

TEST_CASE("a consumer on another thread sees every item once, in order") {
  lane_queue<int> q;
  auto at = q.start();
  long long sum = 0;
  bool ordered = true;
  std::thread consumer([&] {
    for (int i = 0; i < 100000; ++i) {
      const int v = q.next(at, never);
      ordered = ordered && v == i;
      sum += v;
      q.finished(at);
    }
  });
  for (int i = 0; i < 100000; ++i) {
    q.slot() = i;
    q.publish();
  }
  consumer.join();
  CHECK(ordered);
  CHECK(sum == 100000LL * 99999 / 2);
}

TEST_CASE("a queue given back after its consumer left numbers on for the next one") {
  lane_queue<int> q;
  auto at = q.start();
  q.slot() = 7;
  q.publish();
  q.next(at, never);
  q.finished(at);
  q.release();
  auto again = q.start();
  CHECK(again.at == 1);
  q.slot() = 8;
  q.publish();
  CHECK(q.next(again, never) == 8);
  q.finished(again);
  CHECK(q.done.reached(2));
}
