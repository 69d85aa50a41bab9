// merge: traces of two hosts become one trace, on one clock, with one initial tree.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "anonymize.h"
#include "merge.h"
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
  CHECK(h.derived == "merge of 2 traces");
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
    event& s = b.at(t, 1'000, op::stat, 0);
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
  CHECK(ev[0].ts == 1'000);
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

TEST_CASE("a trace's clock pairs put it on realtime, drift and all", "[merge]") {
  const int64_t real0 = epoch;
  const uint64_t mono0 = 1'000'000'000;
  SECTION("no pairs: the header's pair alone") {
    const clock_line l = realtime_line(mono0, real0, {});
    CHECK(l.offset == real0);
    CHECK(l.drift == 0.0);
    CHECK(l.at(5) == static_cast<uint64_t>(real0 + 5));
  }
  SECTION("a clock 100 ppm fast over 10 s") {
    std::vector<std::pair<uint64_t, int64_t>> pairs;
    for (uint64_t s = 1; s <= 10; ++s)
      pairs.emplace_back(mono0 + s * 1'000'000'000, real0 + static_cast<int64_t>(s) * 1'000'100'000);
    const clock_line l = realtime_line(mono0, real0, pairs);
    CHECK(l.offset == real0);
    CHECK(l.drift == Approx(1e-4).margin(1e-9));
    CHECK(l.at(10'000'000'000) == static_cast<uint64_t>(real0 + 10'001'000'000));
  }
  SECTION("a clock set forward by a minute: a step, not a drift") {
    const clock_line l =
        realtime_line(mono0, real0, {{mono0 + 2'000'000'000, real0 + 62'000'000'000}});
    CHECK(l.drift == 0.0);
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
