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

TEST_CASE("the flat intern tables keep ids through growth and forget by generation") {
  // 16 slots hold 12 keys a generation: the first 12 paths fill it (growing from none), the
  // 13th starts a new one, and the 25th leaves only the second dozen and what came back.
  flat_intern<path_keys> paths(16);
  uint32_t next = 0;
  const auto path = [&](uint32_t parent, const std::string& name) {
    return paths.get({parent, name}, [&] { return ++next; });
  };
  for (uint32_t i = 1; i <= 12; ++i) CHECK(path(i % 3, "n" + std::to_string(i)) == i);
  for (uint32_t i = 1; i <= 12; ++i) CHECK(path(i % 3, "n" + std::to_string(i)) == i);
  CHECK(path(0, "n1") == 13);  // same name, another parent: another key
  CHECK(path(1, "n1") == 1);   // found in the old generation, brought forward
  CHECK(next == 13);
  for (uint32_t i = 0; i < 10; ++i) path(7, "m" + std::to_string(i));  // the new one is full
  CHECK(next == 23);
  CHECK(path(7, "x") == 24);   // and a third begins: the first generation is gone
  CHECK(path(2, "n2") == 25);  // forgotten
  CHECK(path(1, "n1") == 1);   // it came forward into the second
  CHECK(path(7, "m0") == 14);

  flat_intern<file_keys> files(4096);  // from 1024 slots to 4096: it grows twice
  next = 0;
  const auto file = [&](uint64_t dev, uint64_t ino, uint32_t gen) {
    return files.get(file_info{dev, ino, gen, 0100000}, [&] { return ++next; });
  };
  for (uint64_t i = 0; i < 2000; ++i) REQUIRE(file(1, i, 0) == i + 1);
  for (uint64_t i = 0; i < 2000; ++i) REQUIRE(file(1, i, 0) == i + 1);
  CHECK(file(1, 5, 1) == 2001);  // another generation of the inode: another file
  CHECK(file(2, 5, 0) == 2002);
  CHECK(files.get(file_info{1, 5, 0, 040000}, [&] { return ++next; }) == 2003);  // its type too
}

TEST_CASE("path components are checked") {
  CHECK(valid_component("a"));
  CHECK(valid_component(".."));  // confinement is the replayer's job, not the table's
  CHECK_FALSE(valid_component(""));
  CHECK_FALSE(valid_component("a/b"));
  CHECK_FALSE(valid_component(std::string("a\0b", 3)));
  CHECK(valid_component(std::string(0xffff, 'x')));  // a reader keeps 16 bits of length
  CHECK_FALSE(valid_component(std::string(0x10000, 'x')));
}
