// The decoder's inode table: entries keep their state while met, move from the old
// generation to the young one, and are dropped after two generations without a meeting.
#include <catch2/catch.hpp>

#include "inode_table.h"

using fsrr::recorder::inode_table;

TEST_CASE("inode table: an entry is added once and keeps what the decoder wrote into it") {
  inode_table t(1000);
  auto [a, added] = t.at(8, 42);
  CHECK(added);
  CHECK(a.id == fsrr::no_id);
  CHECK_FALSE(a.gen_known);
  a.id = 7;
  a.gen = 99;
  a.gen_known = true;
  auto [b, again] = t.at(8, 42);
  CHECK_FALSE(again);
  CHECK(&a == &b);
  CHECK(b.id == 7);
  CHECK(b.gen == 99);
  // The same number on another device is another inode.
  auto [c, other] = t.at(9, 42);
  CHECK(other);
  CHECK(c.id == fsrr::no_id);
  CHECK(t.size() == 2);
}

TEST_CASE("inode table: thousands of inodes in a table sized for them, all found again") {
  inode_table t(5000);
  for (uint32_t i = 0; i < 5000; ++i) t.at(i % 3, 1000 + i * 7).first.id = i;
  for (uint32_t i = 0; i < 5000; ++i) {
    auto [s, added] = t.at(i % 3, 1000 + i * 7);
    REQUIRE_FALSE(added);
    REQUIRE(s.id == i);
  }
  CHECK(t.size() == 5000);
}

TEST_CASE("inode table: a full young generation ages, an old entry met again moves back") {
  inode_table t(4);
  for (uint32_t i = 1; i <= 4; ++i) t.at(1, i).first.id = i * 10;
  CHECK(t.size() == 4);
  // The fifth makes the four the old generation.
  auto [e, added5] = t.at(1, 5);
  CHECK(added5);
  e.id = 50;
  CHECK(t.size() == 5);
  // Inode 2 is met again: found, with its state, now in the young generation.
  auto [two, added2] = t.at(1, 2);
  CHECK_FALSE(added2);
  CHECK(two.id == 20);
  two.incarnation = 3;
  // Two more fill the young generation (5, 2, 6, 7); the next turns it old and drops 1, 3, 4.
  t.at(1, 6);
  t.at(1, 7);
  t.at(1, 8);
  CHECK(t.size() == 5);                      // 5, 2, 6, 7 and 8: 1, 3 and 4 are gone
  CHECK(t.at(1, 2).first.incarnation == 3);  // aged with the young generation, still there
  CHECK(t.at(1, 5).first.id == 50);
  auto [one, added1] = t.at(1, 1);
  CHECK(added1);  // dropped: met afresh
  CHECK(one.id == fsrr::no_id);
}

TEST_CASE("inode table: an old entry met when the young generation is full is kept") {
  inode_table t(4);
  for (uint32_t i = 1; i <= 4; ++i) t.at(1, i).first.id = i * 10;
  for (uint32_t i = 5; i <= 8; ++i) t.at(1, i);  // 1-4 old, 5-8 young and full
  CHECK(t.size() == 8);
  // Inode 1 is met as the young generation must age: it moves, with its state, before the
  // generation it was in is dropped.
  auto [one, added] = t.at(1, 1);
  CHECK_FALSE(added);
  CHECK(one.id == 10);
  CHECK(t.size() == 5);  // 5-8 now old, 1 young; 2-4 gone
  CHECK(t.at(1, 2).second);
}

TEST_CASE("inode table: a young generation grows as it fills and finds every entry") {
  inode_table t(100'000);
  for (uint32_t i = 0; i < 100'000; ++i) t.at(7, i).first.id = i + 1;
  CHECK(t.size() == 100'000);
  for (uint32_t i = 0; i < 100'000; i += 997) {
    auto [s, added] = t.at(7, i);
    REQUIRE_FALSE(added);
    REQUIRE(s.id == i + 1);
  }
}
