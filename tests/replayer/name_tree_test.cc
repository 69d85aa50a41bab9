// The end-state model's namespace: names found by (directory, name), a renamed directory
// taking its contents along, children handed out in name order, ids reused only when safe.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "name_tree.h"

using namespace fsrr;

namespace {

std::vector<std::string> names_below(const name_tree& t, const name_tree::index& ix,
                                     name_tree::id n) {
  std::vector<std::string> v;
  for (const name_tree::id k : ix.children(n)) v.emplace_back(t.name(k));
  return v;
}

}  // namespace

TEST_CASE("a name tree finds names by directory and moves a directory with what is below it") {
  name_tree t(7);
  CHECK(t.value(name_tree::root) == 7);
  const auto a = t.add(name_tree::root, "a", 1);
  const auto b = t.add(name_tree::root, "b", 2);
  const auto x = t.add(a, "x", 3);
  const auto y = t.add(x, "y", 4);
  CHECK(t.child(name_tree::root, "a") == a);
  CHECK(t.child(a, "x") == x);
  CHECK(t.child(x, "y") == y);
  CHECK(t.child(b, "x") == name_tree::none);
  CHECK(t.child(name_tree::root, "x") == name_tree::none);

  t.unlink(x);  // mv /a/x /b/z
  CHECK(t.child(a, "x") == name_tree::none);
  t.link(x, b, "z");
  CHECK(t.child(b, "z") == x);
  CHECK(t.child(x, "y") == y);  // came along
  CHECK(t.parent(x) == b);
  CHECK(t.name(x) == "z");
  CHECK(t.value(y) == 4);
}

TEST_CASE("a name tree hands out each directory's names in order, only those linked") {
  name_tree t;
  const auto d = t.add(name_tree::root, "d", 0);
  for (const char* n : {"m", "b", "z", "a", "k"}) t.add(d, n, 0);
  const auto gone = t.add(name_tree::root, "gone", 0);
  t.add(gone, "inside", 0);
  t.unlink(gone);
  t.drop(gone);
  const auto ix = t.ordered();
  CHECK(names_below(t, ix, name_tree::root) == std::vector<std::string>{"d"});
  CHECK(names_below(t, ix, d) == std::vector<std::string>{"a", "b", "k", "m", "z"});
}

TEST_CASE("a dropped name's id is reused only when nothing is below it") {
  name_tree t;
  const auto dir = t.add(name_tree::root, "dir", 0);
  const auto under = t.add(dir, "under", 0);
  const auto leaf = t.add(name_tree::root, "leaf", 0);
  t.unlink(dir);
  t.drop(dir);  // "under" still names it as parent: dir's id must not come back
  t.unlink(leaf);
  t.drop(leaf);
  const auto n1 = t.add(name_tree::root, "new1", 0);
  const auto n2 = t.add(name_tree::root, "new2", 0);
  CHECK(n1 == leaf);
  CHECK(n2 != dir);
  CHECK(t.child(n2, "under") == name_tree::none);
  CHECK(t.child(dir, "under") == under);  // unreachable, not inherited
  const auto ix = t.ordered();
  CHECK(names_below(t, ix, name_tree::root) == std::vector<std::string>{"new1", "new2"});
}

TEST_CASE("a name tree agrees with a map through many adds, renames and removals") {
  // Enough to grow the table several times and to shift entries back over removed ones.
  name_tree t;
  std::map<std::string, name_tree::id> want;  // name under the root -> id
  std::mt19937 rng(42);
  for (int i = 0; i < 200000; ++i) {
    const std::string n = fmt::format("n{}", rng() % 20000);
    const int what = static_cast<int>(rng() % 3);
    const auto it = want.find(n);
    if (it == want.end()) {
      want[n] = t.add(name_tree::root, n, static_cast<uint32_t>(i));
    } else if (what == 0) {  // removed
      t.unlink(it->second);
      t.drop(it->second);
      want.erase(it);
    } else if (what == 1) {  // renamed to a name not there
      const std::string to = n + "r";
      if (want.count(to)) continue;
      t.unlink(it->second);
      t.link(it->second, name_tree::root, to);
      want[to] = it->second;
      want.erase(n);
    }
  }
  for (const auto& [n, id] : want) REQUIRE(t.child(name_tree::root, n) == id);
  for (int i = 0; i < 20000; ++i) {
    const std::string n = fmt::format("n{}", i);
    if (!want.count(n)) REQUIRE(t.child(name_tree::root, n) == name_tree::none);
  }
  const auto ix = t.ordered();
  std::vector<std::string> names;
  for (const auto& [n, id] : want) names.push_back(n);
  CHECK(names_below(t, ix, name_tree::root) == names);
}

TEST_CASE("a name tree keeps its names when renames have left most of them behind") {
  name_tree t;
  const auto d = t.add(name_tree::root, "d", 0);
  const auto f = t.add(d, "f", 0);
  const std::string pad(100, 'x');
  // 200,000 renames of 100-byte names: 20 MB left behind, copied out along the way.
  for (int i = 0; i < 200000; ++i) {
    t.unlink(f);
    t.link(f, d, fmt::format("{}{}", pad, i));
  }
  CHECK(t.name(d) == "d");
  CHECK(t.name(f) == fmt::format("{}{}", pad, 199999));
  CHECK(t.child(d, fmt::format("{}{}", pad, 199999)) == f);
  CHECK(t.child(d, fmt::format("{}{}", pad, 199998)) == name_tree::none);
  CHECK(t.compactions() > 0);
}

TEST_CASE("a name tree refers to the names its owner keeps and copies only the others") {
  // The owner's names, as the end-state model has the reader's path components.
  std::deque<std::string> kept = {"", "d", "f"};
  name_tree t(0, [&](name_tree::name_ref r) { return std::string_view(kept.at(r)); });
  const auto d = t.add(name_tree::root, "d", 0, 1);
  const auto own = t.add(d, "copied", 0);  // no reference: the tree's copy
  const auto f = t.add(d, "f", 0, 2);
  CHECK(t.child(name_tree::root, "d") == d);
  CHECK(t.child(d, "f") == f);
  CHECK(t.child(d, "copied") == own);
  CHECK(t.name(f) == "f");
  // 200,000 renames to names the owner keeps: nothing copied, nothing left behind
  const std::string pad(100, 'x');
  for (int i = 0; i < 200000; ++i) {
    kept.push_back(fmt::format("{}{}", pad, i));
    t.unlink(f);
    t.link(f, d, kept.back(), static_cast<name_tree::name_ref>(kept.size() - 1));
  }
  CHECK(t.compactions() == 0);
  CHECK(t.name(f) == fmt::format("{}{}", pad, 199999));
  CHECK(t.child(d, fmt::format("{}{}", pad, 199999)) == f);
  CHECK(t.child(d, fmt::format("{}{}", pad, 199998)) == name_tree::none);
  // and back to a copy of its own, then to a reference again
  t.unlink(f);
  t.link(f, d, "mine");
  CHECK(t.name(f) == "mine");
  t.unlink(f);
  t.link(f, d, "f", 2);
  CHECK(t.child(d, "f") == f);
  CHECK(t.child(d, "mine") == name_tree::none);
  CHECK(names_below(t, t.ordered(), d) == std::vector<std::string>{"copied", "f"});
}
