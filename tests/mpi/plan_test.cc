// The MPI replay's plan (mpi/rank_plan.h): who replays which recorded processes, and which
// files and paths more than one rank touches. No MPI needed.
#include <fcntl.h>
#include <signal.h>

#include <catch2/catch.hpp>

#include "ordering.h"
#include "rank_plan.h"
#include "temp_dir.h"
#include "trace_builder.h"

using namespace fsrr;

namespace {

// `n` appends of 10 bytes by thread t to fd 3 (opened on `path` first, closed after).
void appends(test::trace_builder& b, thread_id t, const std::string& path, int n) {
  event& o = b.next(t, op::openat, 3);
  o.path = b.path(path);
  o.flags = O_WRONLY | O_CREAT | O_APPEND;
  o.mode = 0644;
  for (int i = 0; i < n - 2; ++i) {
    event& w = b.next(t, op::write, 10);
    w.fd = 3;
    w.size = 10;
  }
  b.next(t, op::close).fd = 3;
}

mpi::rank_plan plan(const std::string& trace, int ranks) {
  trace_reader r = or_throw(trace_reader::open(trace));
  return or_throw(mpi::rank_plan::make(r, ranks));
}

}  // namespace

TEST_CASE(
    "processes go largest first onto the least-loaded rank, and every rank gets the same plan") {
  test::temp_dir dir;
  const std::string trace = dir / "t.trace";
  {
    test::trace_builder b(trace);
    b.tree_dir("/d");
    const thread_id a = b.thread(10, 10, 1), c = b.thread(20, 20, 2), d = b.thread(30, 30, 3),
                    e = b.thread(40, 40, 4);
    appends(b, a, "/d/a", 40);
    appends(b, c, "/d/c", 30);
    appends(b, d, "/d/d", 20);
    appends(b, e, "/d/e", 10);
    b.finish();
  }
  const mpi::rank_plan p = plan(trace, 2);
  // 40 → rank 0, 30 → rank 1, 20 → rank 1 (30 < 40), 10 → rank 0 (40 < 50)
  CHECK(p.rank_of(1) == 0);
  CHECK(p.rank_of(2) == 1);
  CHECK(p.rank_of(3) == 1);
  CHECK(p.rank_of(4) == 0);
  CHECK(p.share(0).events == 50);
  CHECK(p.share(1).events == 50);
  CHECK(p.share(0).processes == 2);
  CHECK(p.share(1).threads == 2);
  const mpi::rank_plan again = plan(trace, 2);
  for (thread_id t = 1; t <= 4; ++t) CHECK(again.rank_of(t) == p.rank_of(t));
}

TEST_CASE(
    "a child that writes to an fd its parent opened stays on its parent's rank, and a "
    "rank left without processes is idle") {
  test::temp_dir dir;
  const std::string trace = dir / "t.trace";
  {
    test::trace_builder b(trace);
    b.tree_dir("/d");
    const thread_id parent = b.thread(10, 10, 1), child = b.thread(11, 11, 2),
                    other = b.thread(20, 20, 3);
    event& o = b.next(parent, op::openat, 3);
    o.path = b.path("/d/shared");
    o.flags = O_WRONLY | O_CREAT;
    event& f = b.next(parent, op::fork, 11);
    f.aux = 2;
    for (int i = 0; i < 30; ++i) {
      event& w = b.next(child, op::write, 10);
      w.fd = 3;
      w.size = 10;
    }
    b.next(child, op::exit);
    appends(b, other, "/d/other", 5);
    b.finish();
  }
  const mpi::rank_plan p = plan(trace, 3);
  CHECK(p.rank_of(1) == p.rank_of(2));
  CHECK(p.rank_of(3) != p.rank_of(1));
  CHECK(p.processes_kept_together() == 1);
  CHECK(p.share(p.rank_of(1)).processes == 2);
  CHECK(p.share(2).threads == 0);  // two groups for three ranks
  CHECK(p.share(2).events == 0);
}

TEST_CASE(
    "a file the processes of two ranks append to is watched by both, each one's own file "
    "by nobody else") {
  test::temp_dir dir;
  const std::string trace = dir / "t.trace";
  {
    test::trace_builder b(trace);
    b.tree_dir("/d");
    const thread_id a = b.thread(10, 10, 1), c = b.thread(20, 20, 2);
    appends(b, a, "/d/log", 10);
    appends(b, c, "/d/log", 10);
    appends(b, a, "/d/a", 10);
    appends(b, c, "/d/c", 10);
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(trace));
  const mpi::rank_plan p = or_throw(mpi::rank_plan::make(r, 2));
  REQUIRE(p.rank_of(1) != p.rank_of(2));
  path_id log = no_id, own = no_id, d = no_id;
  for (path_id i = 1; i <= r.path_count(); ++i) {
    const std::string s = r.path_string(i);
    if (s == "/d/log") log = i;
    if (s == "/d/a") own = i;
    if (s == "/d") d = i;
  }
  REQUIRE(log != no_id);
  REQUIRE(own != no_id);
  CHECK(p.path_ranks(log) == 0b11);
  CHECK(p.path_ranks(d) == 0b11);  // the directory both name files in
  CHECK(p.path_ranks(own) == uint64_t{1} << p.rank_of(1));
  const uint64_t log_key = order_key(order_kind::path, log);
  const uint64_t own_key = order_key(order_kind::path, own);
  const int ra = p.rank_of(1), rc = p.rank_of(2);
  CHECK(p.watchers(std::span(&log_key, 1), ra) == uint64_t{1} << rc);
  CHECK(p.watchers(std::span(&own_key, 1), ra) == 0);
  CHECK(p.touched_by(log_key, rc));
  CHECK_FALSE(p.touched_by(own_key, rc));
  const uint64_t handle_key = order_key(order_kind::handle, 1);
  CHECK(p.watchers(std::span(&handle_key, 1), ra) == 0);  // open files are never shared
}

TEST_CASE(
    "a merged trace's hosts are shared out whole first, then each host's processes over "
    "its ranks, and the same pid on two hosts is two processes") {
  test::temp_dir dir;
  const std::string trace = dir / "t.trace";
  {
    header_info h;
    h.writer = "test";
    h.hosts.resize(2);
    h.hosts[0].name = "alpha";
    h.hosts[1].name = "beta";
    test::trace_builder b(trace, h);
    b.tree_dir("/d");
    auto thread = [&](int32_t pid, uint16_t host, uint32_t table) {
      thread_info t{pid, pid, 1, b.str("test"), table};
      t.host = host;
      return b.writer().add_thread(t);
    };
    const thread_id a10 = thread(10, 0, 1), a11 = thread(11, 0, 2), b10 = thread(10, 1, 3),
                    b12 = thread(12, 1, 4);
    appends(b, a10, "/d/a10", 30);
    appends(b, a11, "/d/a11", 10);
    appends(b, b10, "/d/b10", 20);
    appends(b, b12, "/d/b12", 20);
    b.finish();
  }
  SECTION("two ranks: a host each") {
    const mpi::rank_plan p = plan(trace, 2);
    CHECK(p.rank_of(1) == 0);
    CHECK(p.rank_of(2) == 0);
    CHECK(p.rank_of(3) == 1);
    CHECK(p.rank_of(4) == 1);
    CHECK(p.share(0).hosts == std::vector<uint16_t>{0});
    CHECK(p.share(1).hosts == std::vector<uint16_t>{1});
    CHECK(p.share(1).processes == 2);  // pid 10 of beta is not alpha's pid 10
  }
  SECTION("four ranks: two a host, its processes balanced over them") {
    const mpi::rank_plan p = plan(trace, 4);
    CHECK(p.rank_of(1) == 0);
    CHECK(p.rank_of(2) == 1);
    CHECK(p.rank_of(3) == 2);
    CHECK(p.rank_of(4) == 3);
  }
  SECTION("three ranks: the spare rank goes to the first of two equal hosts") {
    const mpi::rank_plan p = plan(trace, 3);
    CHECK(p.rank_of(1) == 0);
    CHECK(p.rank_of(2) == 1);
    CHECK(p.rank_of(3) == 2);
    CHECK(p.rank_of(4) == 2);
    CHECK(p.share(2).hosts == std::vector<uint16_t>{1});
  }
}

TEST_CASE("rank 0's plan reaches the other ranks whole, and is refused for another trace") {
  test::temp_dir dir;
  const std::string trace = dir / "t.trace", other = dir / "o.trace";
  for (const std::string& path : {trace, other}) {
    test::trace_builder b(path);
    b.tree_dir("/d");
    const thread_id a = b.thread(10, 10, 1), c = b.thread(20, 20, 2);
    appends(b, a, "/d/a", 40);
    appends(b, c, "/d/a", 30);  // one file, both ranks
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(trace));
  const mpi::rank_plan p = or_throw(mpi::rank_plan::make(r, 2));
  const std::vector<uint8_t> bytes = p.to_bytes(r);
  const mpi::rank_plan got = or_throw(mpi::rank_plan::from_bytes(bytes, r, 2));
  for (thread_id t = 1; t <= 2; ++t) CHECK(got.rank_of(t) == p.rank_of(t));
  CHECK(got.rank_of(1) != got.rank_of(2));
  for (int k = 0; k < 2; ++k) {
    CHECK(got.share(k).events == p.share(k).events);
    CHECK(got.share(k).threads == 1);
  }
  size_t shared = 0;  // /d/a and /d: both ranks' threads touch them
  for (path_id x = 1; x <= r.path_count(); ++x) {
    CHECK(got.path_ranks(x) == p.path_ranks(x));
    shared += got.path_ranks(x) == 3;
  }
  CHECK(shared >= 1);
  for (file_id f = 1; f <= r.file_count(); ++f) CHECK(got.file_ranks(f) == p.file_ranks(f));
  CHECK(got.to_bytes(r) == bytes);
  // another recording (another trace id), ranks of another count, bytes cut short
  trace_reader o = or_throw(trace_reader::open(other));
  const auto refused = mpi::rank_plan::from_bytes(bytes, o, 2);
  REQUIRE(!refused);
  CHECK(refused.error().message ==
        "rank 0 read another trace than this rank (its id or event count differs): every rank "
        "needs the same trace file");
  CHECK(!mpi::rank_plan::from_bytes(bytes, r, 3));
  CHECK(!mpi::rank_plan::from_bytes(std::span(bytes).first(bytes.size() - 1), r, 2));
}
