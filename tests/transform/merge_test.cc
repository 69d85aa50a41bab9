// merge: traces of two hosts become one trace, on one clock, with one initial tree.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "anonymize.h"
#include "merge.h"
#include "slice.h"
#include "temp_dir.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "trace_reader.h"

using namespace fsrr;
using namespace fsrr::transform;

namespace {

constexpr int64_t epoch = 1'780'000'000'000'000'000;  // realtime of host a's start

header_info host(const std::string& name, uint64_t mono, int64_t real) {
  header_info h;
  h.writer = "test";
  h.hostname = name;
  h.kernel = "6.18.0";
  h.command = {"sh", "-c", name};
  h.clock_monotonic_ns = mono;
  h.clock_realtime_ns = real;
  return h;
}

// Host a: appends 10 bytes to /shared/log at 1 ms, creates /shared/new at 2 ms.
void write_a(const std::string& path) {
  test::trace_builder b(path, host("alpha", 5'000'000'000, epoch));
  const thread_id t = b.thread(100, 100, 1);
  b.tree_dir("/shared");
  b.tree_file("/shared/log", 0, 0644, b.file(7));
  event& o = b.at(t, 1'000'000, op::openat, 3);
  o.path = b.path("/shared/log"), o.file = b.file(7), o.flags = O_WRONLY | O_APPEND;
  event& w = b.at(t, 1'010'000, op::write, 10);
  w.fd = 3, w.file = b.file(7), w.size = 10;
  event& c = b.at(t, 2'000'000, op::openat, 4);
  c.path = b.path("/shared/new"), c.file = b.file(8), c.flags = O_WRONLY | O_CREAT | O_EXCL;
  b.finish();
}

// Host b, started 500 ms after a on another monotonic clock: finds the log 10 bytes long and
// /shared/new there (a made both), appends to the one and renames the other.
void write_b(const std::string& path) {
  test::trace_builder b(path, host("beta", 90'000'000'000, epoch + 500'000'000));
  const thread_id t = b.thread(100, 100, 1);  // the same tid, pid and fd table as a's
  b.tree_dir("/shared");
  b.tree_file("/shared/log", 10, 0644, b.file(7));  // the same inode numbers, another host
  b.tree_file("/shared/new", 0, 0644, b.file(9));
  b.tree_file("/shared/b-only", 5, 0644, b.file(10));
  event& o = b.at(t, 10'000'000, op::openat, 3);
  o.path = b.path("/shared/log"), o.file = b.file(7), o.flags = O_WRONLY | O_APPEND;
  event& w = b.at(t, 10'010'000, op::write, 20);
  w.fd = 3, w.file = b.file(7), w.size = 20, w.offset = 10;
  event& r = b.at(t, 20'000'000, op::rename, 0);
  r.path = b.path("/shared/new"), r.path2 = b.path("/shared/renamed"), r.file = b.file(9);
  b.finish();
}

struct merged {
  test::temp_dir tmp;
  std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  merge_result result;
  merged() {
    write_a(a);
    write_b(b);
    trace_reader ra = or_throw(trace_reader::open(a)), rb = or_throw(trace_reader::open(b));
    result = or_throw(merge({&ra, &rb}, {a, b}, out, {}));
  }
};

std::vector<event> events_of(trace_reader& r) {
  std::vector<event> v;
  auto s = r.events();
  for (event e; s.next(e);) v.push_back(e);
  or_throw(s.status());
  return v;
}

}  // namespace

TEST_CASE("merge puts two hosts on one clock and keeps their threads, fds and files apart",
          "[merge]") {
  merged m;
  trace_reader r = or_throw(trace_reader::open(m.out));
  const header_info& h = r.header();
  // A reader of 1.x refuses it rather than take two hosts for one; of 2.x, rather than take
  // its 16 ns units for nanoseconds.
  CHECK(h.format_major == 3);
  REQUIRE(h.hosts.size() == 2);
  CHECK(h.hosts[0].name == "alpha");
  CHECK(h.hosts[1].name == "beta");
  CHECK(h.hosts[0].offset_ns == 0);
  CHECK(h.hosts[1].offset_ns == 500'000'000);
  CHECK(h.hosts[1].clock_monotonic_ns == 90'000'000'000);
  CHECK(h.hosts[1].command == std::vector<std::string>{"sh", "-c", "beta"});
  CHECK(h.hosts[0].trace_id.size() == 32);
  CHECK(h.hosts[0].trace_id != h.hosts[1].trace_id);
  CHECK(h.trace_id != h.hosts[0].trace_id);
  CHECK(h.clock_realtime_ns == epoch);
  CHECK(h.hostname == "alpha,beta");
  // /shared/log in both trees, /shared/new made by a and in b's tree
  CHECK(h.derived == "merge of 2 traces; 2 files outside the system directories united across "
                     "hosts");
  CHECK(m.result.united == 2);
  CHECK(m.result.offsets_ns == std::vector<uint64_t>{0, 500'000'000});

  REQUIRE(r.thread_count() == 2);
  std::vector<thread_info> threads{r.thread(1), r.thread(2)};
  CHECK(threads[0].tid == 100);
  CHECK(threads[1].tid == 100);
  CHECK(threads[0].host == 0);
  CHECK(threads[1].host == 1);
  CHECK(threads[0].fd_table == 1);
  CHECK(threads[1].fd_table == 2);  // b's table 1 after a's
  CHECK(r.summary().processes == 2);  // pid 100 twice, on two hosts

  const std::vector<event> ev = events_of(r);
  REQUIRE(ev.size() == 6);
  // a's at their own times, b's 500 ms later, in one order
  CHECK(ev[0].ts == 1'000'000);
  CHECK(ev[2].ts == 2'000'000);
  CHECK(ev[3].ts == 510'000'000);
  CHECK(ev[3].kind == op::openat);
  CHECK(r.thread(ev[3].thread).host == 1);
  CHECK(ev[5].kind == op::rename);
  CHECK(ev[5].ts == 520'000'000);
  // one log file, whoever writes it; b renames the file a made
  CHECK(ev[1].file == ev[0].file);
  CHECK(ev[4].file == ev[0].file);
  CHECK(ev[5].file == ev[2].file);
  CHECK(r.file(ev[2].file).ino == 8);
  CHECK(r.file(ev[2].file).host == 0);

  // one tree: /shared and the log once (a's, as a found them: empty), /shared/new left to a's
  // create, b's own file kept, as b's host's
  std::vector<std::string> paths;
  uint64_t log_size = 99;
  for (const tree_entry& e : r.tree()) {
    paths.push_back(r.path_string(e.path));
    if (paths.back() == "/shared/log") log_size = e.size;
    if (paths.back() == "/shared/b-only") {
      CHECK(r.file(e.file).ino == 10);
      CHECK(r.file(e.file).host == 1);
    }
  }
  CHECK(paths == std::vector<std::string>{"/shared", "/shared/log", "/shared/b-only"});
  CHECK(log_size == 0);
  CHECK(m.result.joined == 2);
  CHECK(m.result.created == 1);
  CHECK(m.result.tree == 3);
  CHECK(m.result.events == 6);
}

TEST_CASE("merge refuses a trace twice, also inside a merged one", "[merge]") {
  merged m;
  trace_reader a1 = or_throw(trace_reader::open(m.a)), a2 = or_throw(trace_reader::open(m.a));
  const auto twice = merge({&a1, &a2}, {"one", "two"}, m.tmp / "aa.trace", {});
  REQUIRE(!twice);
  CHECK(twice.error().message.find("one and two hold the same recording (trace id ") == 0);
  trace_reader ab = or_throw(trace_reader::open(m.out)), b = or_throw(trace_reader::open(m.b));
  const auto again = merge({&ab, &b}, {"ab", "b"}, m.tmp / "abb.trace", {});
  REQUIRE(!again);
  CHECK(again.error().message.find("ab and b hold the same recording") == 0);
  struct stat st {};
  CHECK(::stat((m.tmp / "aa.trace").c_str(), &st) != 0);  // nothing written
  CHECK(::stat((m.tmp / "abb.trace").c_str(), &st) != 0);
  const auto one = merge({&b}, {"b"}, m.tmp / "b1.trace", {});
  REQUIRE(!one);
  CHECK(one.error().message == "merge needs two traces or more");
}

TEST_CASE("a merged trace merges again: its hosts come along", "[merge]") {
  merged m;
  const std::string c = m.tmp / "c.trace", all = m.tmp / "abc.trace";
  {
    test::trace_builder b(c, host("gamma", 7'000'000, epoch - 250'000'000));  // the earliest
    const thread_id t = b.thread(5, 5, 3);
    event& s = b.at(t, 1'024, op::stat, 0);  // a multiple of the writer's 16 ns
    s.path = b.path("/shared/log");
    b.finish();
  }
  trace_reader ab = or_throw(trace_reader::open(m.out)), rc = or_throw(trace_reader::open(c));
  or_throw(merge({&ab, &rc}, {"ab", "c"}, all, {}));
  trace_reader r = or_throw(trace_reader::open(all));
  REQUIRE(r.header().hosts.size() == 3);
  CHECK(r.header().hosts[0].name == "alpha");
  CHECK(r.header().hosts[0].offset_ns == 250'000'000);
  CHECK(r.header().hosts[1].offset_ns == 750'000'000);
  CHECK(r.header().hosts[2].name == "gamma");
  CHECK(r.header().hosts[2].offset_ns == 0);
  CHECK(r.header().clock_realtime_ns == epoch - 250'000'000);
  const std::vector<event> ev = events_of(r);
  REQUIRE(ev.size() == 7);
  CHECK(ev[0].ts == 1'024);
  CHECK(r.thread(ev[0].thread).host == 2);
  CHECK(r.thread(ev[0].thread).fd_table == 3 + 2);  // after the merged trace's two tables
  CHECK(ev[1].ts == 251'000'000);
  CHECK(r.thread(ev[6].thread).host == 1);
}

TEST_CASE("merge names the path two traces found in different states", "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace";
  {
    test::trace_builder x(a, host("alpha", 1'000, epoch));
    x.thread(1, 1, 1);
    x.tree_dir("/shared");
    x.tree_file("/shared/data", 4096);
    x.tree_symlink("/shared/link", "data");
    x.finish();
  }
  auto write_b = [&](bool dir) {
    test::trace_builder y(b, host("beta", 2'000, epoch + 1'000));
    y.thread(1, 1, 1);
    y.tree_dir("/shared");
    if (dir)
      y.tree_dir("/shared/data");
    else
      y.tree_file("/shared/data", 4096);
    y.tree_symlink("/shared/link", dir ? "data" : "elsewhere");
    y.finish();
  };
  write_b(true);
  {
    trace_reader ra = or_throw(trace_reader::open(a)), rb = or_throw(trace_reader::open(b));
    const auto r = merge({&ra, &rb}, {"a.trace", "b.trace"}, tmp / "out.trace", {});
    REQUIRE(!r);
    CHECK(r.error().message ==
          "merge: /shared/data: two states at once: a file of 4096 bytes in a.trace (alpha), a "
          "directory in b.trace (beta), and no event in the traces makes the one the other");
  }
  write_b(false);
  {
    trace_reader ra = or_throw(trace_reader::open(a)), rb = or_throw(trace_reader::open(b));
    const auto r = merge({&ra, &rb}, {"a.trace", "b.trace"}, tmp / "out.trace", {});
    REQUIRE(!r);
    CHECK(r.error().message.find("merge: /shared/link: two states at once: a symlink to 'data' "
                                 "in a.trace (alpha), a symlink to 'elsewhere' in b.trace") == 0);
  }
  struct stat st {};
  CHECK(::stat((tmp / "out.trace").c_str(), &st) != 0);
}

TEST_CASE("merge refuses traces anonymized with different keys", "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace";
  header_info ha = host("alpha", 1, epoch), hb = host("beta", 1, epoch);
  ha.key_id = "0123456789abcdef";
  test::trace_builder(a, ha).finish();
  test::trace_builder(b, hb).finish();
  trace_reader ra = or_throw(trace_reader::open(a)), rb = or_throw(trace_reader::open(b));
  const auto r = merge({&ra, &rb}, {"a", "b"}, tmp / "out.trace", {});
  REQUIRE(!r);
  CHECK(r.error().message ==
        "a and b are anonymized with different keys (or one is not): their names do not match; "
        "anonymize both with one --key-file first");
}

TEST_CASE("a trace's clock pairs put it on realtime, a step of the clock aside", "[merge]") {
  const int64_t real0 = epoch;
  const uint64_t mono0 = 1'000'000'000;
  SECTION("no pairs: the header's pair alone") {
    const clock_line l = realtime_line(mono0, real0, {});
    CHECK(l.offset == real0);
    CHECK(l.at(5) == static_cast<uint64_t>(real0 + 5));
  }
  SECTION("the clock set forward by a minute after the start: the pairs' median places it") {
    std::vector<std::pair<uint64_t, int64_t>> pairs;
    for (uint64_t k = 1; k <= 4; ++k)
      pairs.emplace_back(mono0 + k * 1'000'000'000,
                         real0 + static_cast<int64_t>(k) * 1'000'000'000 + 60'000'000'000);
    CHECK(realtime_line(mono0, real0, pairs).offset == real0 + 60'000'000'000);
  }
  SECTION("one pair taken across a step does not move the trace") {
    const clock_line l = realtime_line(
        mono0, real0, {{mono0 + 1'000'000'000, real0 + 1'000'000'000},
                       {mono0 + 2'000'000'000, real0 + 62'000'000'000}});
    CHECK(l.offset == real0);
  }
}

TEST_CASE("anonymize of a merged trace hides every host's name and command, and keeps hosts",
          "[merge]") {
  merged m;
  trace_reader ab = or_throw(trace_reader::open(m.out));
  const std::string anon = m.tmp / "anon.trace", key = m.tmp / "key";
  REQUIRE(::system(("echo 'a passphrase' >" + key).c_str()) == 0);
  anonymize_options o;
  o.key_file = key;
  or_throw(anonymize(ab, anon, o));
  trace_reader r = or_throw(trace_reader::open(anon));
  REQUIRE(r.header().hosts.size() == 2);
  for (size_t k = 0; k < 2; ++k) {
    const host_info& x = r.header().hosts[k];
    const host_info& was = ab.header().hosts[k];
    CHECK(x.name.size() == was.name.size());
    CHECK(x.name != was.name);
    REQUIRE(x.command.size() == 3);
    CHECK(x.command[1].size() == 2);  // digests of the same length
    CHECK(x.command[2].size() == was.command[2].size());
    CHECK(x.command[2] != was.command[2]);
    CHECK(x.trace_id == was.trace_id);
    CHECK(x.offset_ns == was.offset_ns);
  }
  CHECK(r.thread(2).host == 1);
  CHECK(r.summary().processes == 2);
}

namespace {

void merge_files(const std::vector<std::string>& files, const std::string& out) {
  std::vector<trace_reader> rs;
  rs.reserve(files.size());
  for (const auto& f : files) rs.push_back(or_throw(trace_reader::open(f)));
  std::vector<trace_reader*> p;
  for (auto& r : rs) p.push_back(&r);
  or_throw(merge(p, files, out, {}));
}

void hard_link(test::trace_builder& b, const std::string& p, file_id f, uint32_t group) {
  tree_entry e;
  e.path = b.path(p);
  e.mode = S_IFREG | 0644;
  e.size = e.allocated = 10;
  e.file = f;
  e.nlink = 2;
  e.link_group = group;
  b.writer().add_tree_entry(e);
}

std::vector<std::string> tree_paths(trace_reader& r) {
  std::vector<std::string> v;
  for (const tree_entry& e : r.tree()) v.push_back(r.path_string(e.path));
  return v;
}

}  // namespace

TEST_CASE("a log made, rotated away and made again: another host's appends go to the new one",
          "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  {
    test::trace_builder x(a, host("alpha", 1'000'000'000, epoch));
    const thread_id t = x.thread(100, 100, 1);
    x.tree_dir("/s");
    event& o = x.at(t, 1'000'000, op::openat, 3);
    o.path = x.path("/s/log"), o.file = x.file(8), o.flags = O_WRONLY | O_CREAT | O_EXCL;
    event& r = x.at(t, 2'000'000, op::rename, 0);
    r.path = x.path("/s/log"), r.path2 = x.path("/s/log.1"), r.file = x.file(8);
    event& o2 = x.at(t, 3'000'000, op::openat, 4);
    o2.path = x.path("/s/log"), o2.file = x.file(9), o2.flags = O_WRONLY | O_CREAT | O_EXCL;
    x.finish();
  }
  {
    test::trace_builder y(b, host("beta", 7'000'000'000, epoch + 100'000'000));
    const thread_id t = y.thread(200, 200, 1);
    y.tree_dir("/s");
    y.tree_file("/s/log", 0, 0644, y.file(9));
    event& o = y.at(t, 1'000'000, op::openat, 3);
    o.path = y.path("/s/log"), o.file = y.file(9), o.flags = O_WRONLY | O_APPEND;
    event& w = y.at(t, 1'100'000, op::write, 200);
    w.fd = 3, w.file = y.file(9), w.size = 200;
    y.finish();
  }
  merge_files({a, b}, out);
  trace_reader r = or_throw(trace_reader::open(out));
  const std::vector<event> ev = events_of(r);
  REQUIRE(ev.size() == 5);
  CHECK(r.file(ev[0].file).ino == 8);
  CHECK(r.file(ev[2].file).ino == 9);
  CHECK(ev[3].file == ev[2].file);  // b's open and write: a's second log
  CHECK(ev[4].file == ev[2].file);
  CHECK(tree_paths(r) == std::vector<std::string>{"/s"});
}

TEST_CASE("a lock one host removes and another makes anew stays in the tree", "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  {
    test::trace_builder x(a, host("alpha", 1'000'000'000, epoch));
    const thread_id t = x.thread(100, 100, 1);
    x.tree_dir("/s");
    event& o = x.at(t, 5'000'000, op::openat, 3);  // 3 ms after b removed it
    o.path = x.path("/s/lock"), o.file = x.file(9), o.flags = O_WRONLY | O_CREAT | O_EXCL;
    x.finish();
  }
  {
    test::trace_builder y(b, host("beta", 1'000'000'000, epoch));
    const thread_id t = y.thread(200, 200, 1);
    y.tree_dir("/s");
    y.tree_file("/s/lock", 0, 0644, y.file(8));
    event& st = y.at(t, 1'000'000, op::stat, 0);
    st.path = y.path("/s/lock"), st.file = y.file(8);
    event& u = y.at(t, 2'000'000, op::unlink, 0);
    u.path = y.path("/s/lock"), u.file = y.file(8);
    y.finish();
  }
  merge_files({a, b}, out);
  trace_reader r = or_throw(trace_reader::open(out));
  CHECK(tree_paths(r) == std::vector<std::string>{"/s", "/s/lock"});
  const std::vector<event> ev = events_of(r);
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].file == ev[1].file);   // b's stat and unlink: the lock b found
  CHECK(ev[2].file != ev[0].file);   // a's: a new one
}

TEST_CASE("hard links two hosts found stay one inode, whichever host used which name first",
          "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  for (int k = 0; k < 2; ++k) {
    test::trace_builder x(k ? b : a, host(k ? "beta" : "alpha", 1'000'000'000, epoch));
    const thread_id t = x.thread(100, 100, 1);
    x.tree_dir("/s");
    hard_link(x, "/s/h1", x.file(5), 1);
    hard_link(x, "/s/h2", x.file(5), 1);
    // a looks at h1 first, b at h2: each name's entry comes from another host
    event& s1 = x.at(t, k ? 20'000'000 : 10'000'000, op::stat, 0);
    s1.path = x.path(k ? "/s/h2" : "/s/h1"), s1.file = x.file(5);
    event& s2 = x.at(t, k ? 40'000'000 : 30'000'000, op::stat, 0);
    s2.path = x.path(k ? "/s/h1" : "/s/h2"), s2.file = x.file(5);
    x.finish();
  }
  merge_files({a, b}, out);
  trace_reader r = or_throw(trace_reader::open(out));
  std::vector<uint32_t> groups;
  std::vector<file_id> files;
  for (const tree_entry& e : r.tree())
    if (S_ISREG(e.mode)) groups.push_back(e.link_group), files.push_back(e.file);
  CHECK(groups == std::vector<uint32_t>{1, 1});
  REQUIRE(files.size() == 2);
  CHECK(files[0] == files[1]);
  for (const event& e : events_of(r)) CHECK(e.file == files[0]);
}

TEST_CASE("one object through three hosts: found by two, renamed by one, found renamed by the "
          "third",
          "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", c = tmp / "c.trace",
                    out = tmp / "abc.trace";
  {
    test::trace_builder z(c, host("gamma", 1'000'000'000, epoch));
    const thread_id t = z.thread(300, 300, 1);
    z.tree_dir("/s");
    z.tree_file("/s/a", 10, 0644, z.file(5));
    event& s = z.at(t, 1'000'000, op::stat, 0);
    s.path = z.path("/s/a"), s.file = z.file(5);
    z.finish();
  }
  {
    test::trace_builder y(b, host("beta", 1'000'000'000, epoch));
    const thread_id t = y.thread(200, 200, 1);
    y.tree_dir("/s");
    y.tree_file("/s/a", 10, 0644, y.file(6));
    event& s = y.at(t, 2'000'000, op::stat, 0);
    s.path = y.path("/s/a"), s.file = y.file(6);
    event& r = y.at(t, 3'000'000, op::rename, 0);
    r.path = y.path("/s/a"), r.path2 = y.path("/s/b"), r.file = y.file(6);
    y.finish();
  }
  {
    test::trace_builder x(a, host("alpha", 1'000'000'000, epoch));
    const thread_id t = x.thread(100, 100, 1);
    x.tree_dir("/s");
    x.tree_file("/s/b", 10, 0644, x.file(7));
    event& s = x.at(t, 50'000'000, op::stat, 0);
    s.path = x.path("/s/b"), s.file = x.file(7);
    x.finish();
  }
  merge_files({a, b, c}, out);
  trace_reader r = or_throw(trace_reader::open(out));
  const std::vector<event> ev = events_of(r);
  REQUIRE(ev.size() == 4);
  CHECK(ev[1].file == ev[0].file);
  CHECK(ev[2].file == ev[0].file);
  CHECK(ev[3].file == ev[0].file);
  // /s/b is left to b's rename: not an entry of the tree beside /s/a
  CHECK(tree_paths(r) == std::vector<std::string>{"/s", "/s/a"});
}

TEST_CASE("a directory used only through what is beneath it was there: another host's mkdir "
          "later does not make it",
          "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  {
    test::trace_builder x(a, host("alpha", 1'000'000'000, epoch));
    const thread_id t = x.thread(100, 100, 1);
    x.tree_dir("/w");
    x.tree_dir("/w/out", 0700);
    x.tree_file("/w/out/f", 10, 0644, x.file(3));
    event& o = x.at(t, 1'000'000, op::openat, 3);
    o.path = x.path("/w/out/f"), o.file = x.file(3), o.flags = O_RDONLY;
    event& r = x.at(t, 2'000'000, op::rename, 0);
    r.path = x.path("/w"), r.path2 = x.path("/w.old"), r.file = x.file(1, S_IFDIR);
    x.finish();
  }
  {
    test::trace_builder y(b, host("beta", 1'000'000'000, epoch));
    const thread_id t = y.thread(200, 200, 1);
    event& m1 = y.at(t, 100'000'000, op::mkdir, 0);
    m1.path = y.path("/w"), m1.mode = 0755;
    event& m2 = y.at(t, 101'000'000, op::mkdir, 0);
    m2.path = y.path("/w/out"), m2.mode = 0755;
    y.finish();
  }
  merge_files({a, b}, out);
  trace_reader r = or_throw(trace_reader::open(out));
  CHECK(tree_paths(r) == std::vector<std::string>{"/w", "/w/out", "/w/out/f"});
  for (const tree_entry& e : r.tree())
    if (r.path_string(e.path) == "/w/out") CHECK((e.mode & 07777) == 0700);
}

TEST_CASE("clone and exec go on with their fd tables renumbered after the earlier inputs'",
          "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  for (int k = 0; k < 2; ++k) {
    test::trace_builder x(k ? b : a, host(k ? "beta" : "alpha", 1'000'000'000, epoch + k));
    const thread_id t = x.thread(100, 100, 1);
    event& c = x.at(t, 1'000, op::clone, 101);
    c.aux = 2;  // the child's table
    event& e = x.at(t, 2'000, op::execve, 0);
    e.path = x.path("/bin/true"), e.aux = 3;
    x.finish();
  }
  merge_files({a, b}, out);
  trace_reader r = or_throw(trace_reader::open(out));
  std::vector<uint64_t> aux;
  for (const event& e : events_of(r)) aux.push_back(e.aux);
  CHECK(aux == std::vector<uint64_t>{2, 2 + 3, 3, 3 + 3});  // b's after a's three tables
  CHECK(r.thread(2).fd_table == 1 + 3);
}

TEST_CASE("a trace older than trace ids given twice is refused by its header", "[merge]") {
  test::temp_dir tmp;
  const std::string shipped = SOURCE_DIR "/traces/seed000-rsync.trace", copy = tmp / "copy.trace";
  REQUIRE(::system(("cp " + shipped + " " + copy).c_str()) == 0);
  trace_reader x = or_throw(trace_reader::open(shipped)), y = or_throw(trace_reader::open(copy));
  REQUIRE(x.header().trace_id.empty());
  const auto r = merge({&x, &y}, {"old", "copy"}, tmp / "out.trace", {});
  REQUIRE(!r);
  CHECK(r.error().message ==
        "old and copy hold the same recording (the same host, start and command; traces older "
        "than format 1.3 carry no trace id): a trace merges once");
}

TEST_CASE("each host's own /etc and /usr may differ: the first host's, counted", "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  for (int k = 0; k < 2; ++k) {
    test::trace_builder x(k ? b : a, host(k ? "beta" : "alpha", 1'000, epoch + k));
    x.thread(1, 1, 1);
    x.tree_dir("/etc");
    x.tree_file("/etc/ld.so.cache", k ? 120 : 100);
    x.finish();
  }
  trace_reader ra = or_throw(trace_reader::open(a)), rb = or_throw(trace_reader::open(b));
  const merge_result m = or_throw(merge({&ra, &rb}, {a, b}, out, {}));
  CHECK(m.differing_system == 1);
  CHECK(m.joined == 2);
  trace_reader r = or_throw(trace_reader::open(out));
  for (const tree_entry& e : r.tree())
    if (S_ISREG(e.mode)) CHECK(e.size == 100);
}

TEST_CASE("slice of a merged trace: HOST:PID picks one host's process, a pid two hosts share is "
          "refused until named",
          "[merge][slice]") {
  merged m;
  trace_reader r = or_throw(trace_reader::open(m.out));
  const auto sliced = [&](std::vector<thread_pick> pids, const std::string& name) {
    slice_options o;
    o.pids = std::move(pids);
    return slice(r, m.tmp / name, o);
  };
  // pid 100 is a process of alpha and of beta
  const auto both = sliced({{"", 100}}, "both.trace");
  REQUIRE(!both);
  CHECK(both.error().message ==
        "--pid 100 is a process on hosts alpha and beta: name one (--pid alpha:100)");
  const auto none = sliced({{"gamma", 100}}, "none.trace");
  REQUIRE(!none);
  CHECK(none.error().message == "--pid gamma:100: the trace has no host gamma (its hosts: alpha, beta)");
  const auto beta = sliced({{"beta", 100}}, "beta.trace");
  REQUIRE(beta);
  // beta's open, write and rename chosen; alpha's three come along because beta needs them
  // (its append follows alpha's 10 bytes, its rename moves the file alpha made)
  CHECK(beta->chosen == 3);
  CHECK(beta->events == 6);
  const auto alpha = sliced({{"alpha", 100}}, "alpha.trace");
  REQUIRE(alpha);
  CHECK(alpha->chosen == 3);
  CHECK(alpha->events == 3);  // alpha needs nothing of beta's
  trace_reader a = or_throw(trace_reader::open(m.tmp / "alpha.trace"));
  for (const event& e : events_of(a)) CHECK(a.thread(e.thread).host == 0);

  // a trace of one host: HOST:PID of it picks as PID does; another host is refused
  trace_reader one = or_throw(trace_reader::open(m.a));
  slice_options named;
  named.pids = {{"alpha", 100}};
  const auto own = slice(one, m.tmp / "own.trace", named);
  REQUIRE(own);
  CHECK(own->chosen == 3);
  named.pids = {{"beta", 100}};
  const auto other = slice(one, m.tmp / "other.trace", named);
  REQUIRE(!other);
  CHECK(other.error().message == "--pid beta:100: the trace is of one host, alpha");

  CHECK(parse_thread_pick("node-2:4711", "--pid")->host == "node-2");
  CHECK(parse_thread_pick("node-2:4711", "--pid")->id == 4711);
  CHECK(parse_thread_pick("4711", "--tid")->host.empty());
  CHECK(parse_thread_pick(":4711", "--pid").error().message ==
        "--pid :4711: HOST:ID names a host before the colon");
  CHECK(parse_thread_pick("a:b", "--tid").error().message ==
        "--tid a:b: a pid or tid (a positive number), or HOST:ID");
}

TEST_CASE("merge refuses, before it writes, a result with more devices than a reader keeps",
          "[merge]") {
  // each trace names 40,000 devices (a file on each); two hosts' are 80,000 pairs in all
  test::temp_dir tmp;
  const auto write = [&](const std::string& path, const std::string& name, int64_t real) {
    test::trace_builder b(path, host(name, 5'000'000'000, real));
    const thread_id t = b.thread(100, 100, 1);
    for (uint64_t d = 1; d <= 40'000; ++d) (void)b.writer().intern_file({d, 7, 0, S_IFREG});
    event& o = b.at(t, 1'000'000, op::openat, 3);
    o.path = b.path("/x"), o.file = b.file(7), o.flags = O_RDONLY;
    b.finish();
  };
  write(tmp / "a.trace", "alpha", epoch);
  write(tmp / "b.trace", "beta", epoch + 1000);
  trace_reader ra = or_throw(trace_reader::open(tmp / "a.trace"));
  trace_reader rb = or_throw(trace_reader::open(tmp / "b.trace"));
  const auto r = merge({&ra, &rb}, {tmp / "a.trace", tmp / "b.trace"}, tmp / "ab.trace", {});
  REQUIRE(!r);
  CHECK(r.error().message ==
        "merge: the traces name 80000 devices in all; a trace holds at most 65,535 (merge fewer "
        "at a time, or slice each to the paths that matter first)");
  struct stat st;
  CHECK(::stat((tmp / "ab.trace").c_str(), &st) != 0);  // nothing written
}

TEST_CASE("merge names each host its own: a name met again gets #N, counted from the recorded "
          "name when merged inputs are merged again",
          "[merge]") {
  test::temp_dir tmp;
  for (const char* n : {"a1", "a2", "a3"}) write_a(tmp / (std::string(n) + ".trace"));
  trace_reader r1 = or_throw(trace_reader::open(tmp / "a1.trace"));
  trace_reader r2 = or_throw(trace_reader::open(tmp / "a2.trace"));
  trace_reader r3 = or_throw(trace_reader::open(tmp / "a3.trace"));
  REQUIRE(merge({&r1, &r2}, {"a1", "a2"}, tmp / "a12.trace", {}));
  trace_reader r12 = or_throw(trace_reader::open(tmp / "a12.trace"));
  CHECK(r12.header().hosts[1].name == "alpha#2");
  CHECK(r12.header().hostname == "alpha,alpha#2");
  REQUIRE(merge({&r12, &r3}, {"a12", "a3"}, tmp / "a123.trace", {}));
  trace_reader r123 = or_throw(trace_reader::open(tmp / "a123.trace"));
  REQUIRE(r123.header().hosts.size() == 3);
  CHECK(r123.header().hosts[0].name == "alpha");
  CHECK(r123.header().hosts[1].name == "alpha#2");
  CHECK(r123.header().hosts[2].name == "alpha#3");
  // anonymized, merge's #N stays beside the recorded name's digest
  anonymize_options o;
  REQUIRE(anonymize(r12, tmp / "anon.trace", o));
  trace_reader anon = or_throw(trace_reader::open(tmp / "anon.trace"));
  const std::string first = anon.header().hosts[0].name;
  CHECK(first != "alpha");
  CHECK(anon.header().hosts[1].name == first + "#2");
}

namespace {

// A host that appends to /shared/log and reads its own /tmp/x, found `x_size` bytes long.
void write_with_own_tmp(const std::string& path, const std::string& name, int64_t start,
                        uint64_t x_size) {
  test::trace_builder b(path, host(name, 5'000'000'000, start));
  const thread_id t = b.thread(100, 100, 1);
  b.tree_dir("/shared");
  b.tree_file("/shared/log", 0, 0644, b.file(7));
  b.tree_dir("/tmp");
  b.tree_file("/tmp/x", x_size, 0644, b.file(20));
  event& o = b.at(t, 1'000'000, op::openat, 3);
  o.path = b.path("/tmp/x"), o.file = b.file(20), o.flags = O_RDONLY;
  event& r = b.at(t, 1'010'000, op::read, static_cast<int64_t>(x_size));
  r.fd = 3, r.file = b.file(20), r.size = x_size;
  event& l = b.at(t, 2'000'000, op::openat, 4);
  l.path = b.path("/shared/log"), l.file = b.file(7), l.flags = O_WRONLY | O_APPEND;
  b.finish();
}

struct own_tmp {
  test::temp_dir tmp;
  std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  own_tmp(uint64_t a_size, uint64_t b_size) {
    write_with_own_tmp(a, "alpha", epoch, a_size);
    write_with_own_tmp(b, "beta", epoch + 1'000'000, b_size);
  }
  result<merge_result> run(std::vector<std::string> shared) {
    trace_reader ra = or_throw(trace_reader::open(a)), rb = or_throw(trace_reader::open(b));
    merge_options o;
    o.force = true;
    o.shared = std::move(shared);
    return merge({&ra, &rb}, {a, b}, out, o);
  }
};

// The output's tree as "placed path size".
std::vector<std::string> placed_tree(trace_reader& r) {
  std::vector<std::string> out;
  for (const tree_entry& e : r.tree())
    out.push_back(fmt::format("{} {}", r.placed_path(e.path), S_ISDIR(e.mode) ? "dir" : std::to_string(e.size)));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("merge --shared: paths outside the shared prefixes and the system directories are "
          "each host's own, in a root of their own",
          "[merge]") {
  // two hosts' /tmp/x of different sizes: one path, two states, nothing explaining it
  own_tmp two(3, 7);
  const auto united = two.run({});
  REQUIRE(!united);
  CHECK(united.error().message.find("/tmp/x: two states at once: a file of 3 bytes") !=
        std::string::npos);
  const merge_result res = or_throw(two.run({"/shared"}));
  CHECK(res.shared_unmet.empty());
  CHECK(res.host_dirs == std::vector<std::string>{"alpha", "beta"});
  trace_reader r = or_throw(trace_reader::open(two.out));
  REQUIRE(r.roots().size() == 3);
  CHECK(r.string(r.roots()[1].where) == "host:alpha");
  CHECK(r.string(r.roots()[2].where) == "host:beta");
  CHECK(placed_tree(r) == std::vector<std::string>{"/root1/shared dir", "/root1/shared/log 0",
                                                   "/root2/tmp dir", "/root2/tmp/x 3",
                                                   "/root3/tmp dir", "/root3/tmp/x 7"});
  CHECK(r.header().derived == "merge of 2 traces; shared: /shared; each host's other paths its own");
  // each host's events name its own /tmp/x
  std::vector<std::string> opened;
  auto events = r.events();
  for (event e; events.next(e);)
    if (e.kind == op::openat)
      opened.push_back(fmt::format("{}:{}", r.thread(e.thread).host, r.placed_path(e.path)));
  std::sort(opened.begin(), opened.end());
  CHECK(opened == std::vector<std::string>{"0:/root1/shared/log", "0:/root2/tmp/x",
                                           "1:/root1/shared/log", "1:/root3/tmp/x"});

  // anonymized, a host's root is named as its host
  const std::string anon = two.tmp / "anon.trace", key = two.tmp / "key";
  REQUIRE(::system(("echo 'a passphrase' >" + key).c_str()) == 0);
  anonymize_options ao;
  ao.key_file = key;
  or_throw(anonymize(r, anon, ao));
  trace_reader an = or_throw(trace_reader::open(anon));
  REQUIRE(an.roots().size() == 3);
  CHECK(an.string(an.roots()[1].where) == "host:" + an.header().hosts[0].name);
  CHECK(an.string(an.roots()[2].where) == "host:" + an.header().hosts[1].name);
  CHECK(an.header().hosts[0].name != "alpha");
}

TEST_CASE("merge counts the files outside the system directories several hosts name", "[merge]") {
  own_tmp same(3, 3);
  CHECK(or_throw(same.run({})).united == 2);  // /tmp/x and /shared/log
  trace_reader r = or_throw(trace_reader::open(same.out));
  CHECK(r.header().derived ==
        "merge of 2 traces; 2 files outside the system directories united across hosts");
  CHECK(r.roots().size() == 1);
  // a prefix nothing lies beneath is said (a typo would make every shared file each host's)
  CHECK(or_throw(same.run({"/shared", "/mnt/lustre"})).shared_unmet ==
        std::vector<std::string>{"/mnt/lustre"});
  for (const char* bad : {"shared", "/", "/a//b", "/a/", "/a/../b", "/a/."})
    CHECK(!same.run({bad}));
}

namespace {

// A host that finds /mnt/lustre/log and /mnt there, and creates /mnt/own right in /mnt, which
// lies on the way to the shared /mnt/lustre.
void write_on_the_way(const std::string& path, const std::string& name, int64_t start) {
  test::trace_builder b(path, host(name, 5'000'000'000, start));
  const thread_id t = b.thread(100, 100, 1);
  b.tree_dir("/mnt", 0711);
  b.tree_dir("/mnt/lustre");
  b.tree_file("/mnt/lustre/log", 0, 0644, b.file(7));
  event& c = b.at(t, 1'000'000, op::openat, 3);
  c.path = b.path("/mnt/own"), c.file = b.file(30), c.flags = O_WRONLY | O_CREAT | O_EXCL;
  b.finish();
}

}  // namespace

TEST_CASE("merge --shared gives each host its copy of the directories on the way to a shared "
          "prefix, where its own paths hang",
          "[merge]") {
  test::temp_dir tmp;
  const std::string a = tmp / "a.trace", b = tmp / "b.trace", out = tmp / "ab.trace";
  write_on_the_way(a, "alpha", epoch);
  write_on_the_way(b, "beta", epoch + 1'000'000);
  trace_reader ra = or_throw(trace_reader::open(a)), rb = or_throw(trace_reader::open(b));
  merge_options o;
  o.shared = {"/mnt/lustre"};
  or_throw(merge({&ra, &rb}, {a, b}, out, o));
  trace_reader r = or_throw(trace_reader::open(out));
  CHECK(placed_tree(r) == std::vector<std::string>{"/root1/mnt dir", "/root1/mnt/lustre dir",
                                                   "/root1/mnt/lustre/log 0", "/root2/mnt dir",
                                                   "/root3/mnt dir"});
  for (const tree_entry& e : r.tree())
    if (r.placed_path(e.path) == "/root2/mnt") {
      CHECK((e.mode & 07777) == 0711);  // as the host found it
      CHECK(e.file == no_id);           // not a second name of the shared one
    }
  std::vector<std::string> made;
  auto events = r.events();
  for (event e; events.next(e);) made.push_back(r.placed_path(e.path));
  std::sort(made.begin(), made.end());
  CHECK(made == std::vector<std::string>{"/root2/mnt/own", "/root3/mnt/own"});
}
