#include <string>

#include <catch2/catch.hpp>

#include "tables.h"

using namespace fsrr;

TEST_CASE("a bounded intern map keeps recent ids and forgets old ones") {
  bounded_intern<std::string, int> m(2);
  int next = 0;
  auto id = [&](const std::string& k) { return m.get(k, [&] { return ++next; }); };
  CHECK(id("a") == 1);
  CHECK(id("b") == 2);
  CHECK(id("a") == 1);  // still in the current generation
  CHECK(id("c") == 3);  // the current generation was full: it became the old one
  CHECK(id("a") == 1);  // found in the old generation, brought forward
  CHECK(id("d") == 4);  // full again: {c, a} is now the old generation, b is gone
  CHECK(id("b") == 5);  // forgotten: a new id
  CHECK(id("c") == 3);
  CHECK(next == 5);
}

TEST_CASE("path components are checked") {
  CHECK(valid_component("a"));
  CHECK(valid_component(".."));  // confinement is the replayer's job, not the table's
  CHECK_FALSE(valid_component(""));
  CHECK_FALSE(valid_component("a/b"));
  CHECK_FALSE(valid_component(std::string("a\0b", 3)));
}
