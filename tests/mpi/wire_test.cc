// What a rank sends rank 0 after the replay (mpi/stats_wire.h): everything the report shows
// comes back as it went, and merges as the ranks' own stats would.
#include <catch2/catch.hpp>

#include "stats_wire.h"
#include "trace_error.h"

using namespace fsrr;

TEST_CASE("a rank's stats come back from the wire as they went, latencies and mismatches too") {
  mpi::rank_result r;
  r.rank = 3;
  r.host = "node07";
  r.clock_offset_ns = -1234;
  r.recorded_hosts = {0, 2};
  replay_stats& s = r.stats;
  s.wall_ns = 5'000'000;
  s.events = 42;
  s.threads = 2;
  op_stats& w = s.ops[static_cast<size_t>(op::write)];
  w.count = 40;
  w.errors = 1;
  w.mismatches = 1;
  w.errnos[28] = 1;
  for (uint64_t ns = 100; ns < 40'000; ns += 1000) w.latency.record(ns);
  w.recorded.record(777);
  s.skipped[static_cast<size_t>(op::exit)] = 2;
  s.bytes_written = 4096;
  s.files = 1;
  s.mismatches = 1;
  s.first_mismatches.push_back({17, 100, "host-b", op::write, "/d/f", 10, -28});
  s.timed = true;
  s.lateness.record(50'000);
  s.op_bound_lateness.record(20'000);
  s.timeline.push_back({40, 0, 4096});
  s.stopped = "ENOSPC on the target";
  s.remote_waits = 5;
  s.realtime_threads = 3;
  s.short_slice_threads = 4;
  s.spread_threads = 7;
  s.cpu_moves = 252;
  s.started_ns = 123456789;
  engine_stats& ring = s.engines[static_cast<size_t>(engine::io_uring)];
  ring.requests = 9;
  ring.as_syscalls = 2;
  ring.fixed_buffers = 6;

  const mpi::rank_result back = or_throw(mpi::from_wire(mpi::to_wire(r)));
  CHECK(back.rank == 3);
  CHECK(back.host == "node07");
  CHECK(back.clock_offset_ns == -1234);
  CHECK(back.recorded_hosts == std::vector<uint16_t>{0, 2});
  const replay_stats& b = back.stats;
  CHECK(b.wall_ns == s.wall_ns);
  CHECK(b.events == 42);
  CHECK(b.threads == 2);
  const op_stats& bw = b.ops[static_cast<size_t>(op::write)];
  CHECK(bw.count == 40);
  CHECK(bw.errors == 1);
  CHECK(bw.errnos == w.errnos);
  CHECK(bw.latency.count() == w.latency.count());
  CHECK(bw.latency.percentile(0.5) == w.latency.percentile(0.5));
  CHECK(bw.latency.percentile(0.99) == w.latency.percentile(0.99));
  CHECK(bw.latency.max() == w.latency.max());
  CHECK(bw.latency.sum() == w.latency.sum());
  CHECK(bw.recorded.max() == 777);
  CHECK(b.skipped == s.skipped);
  CHECK(b.bytes_written == 4096);
  REQUIRE(b.first_mismatches.size() == 1);
  CHECK(b.first_mismatches[0].path == "/d/f");
  CHECK(b.first_mismatches[0].host == "host-b");
  CHECK(b.first_mismatches[0].replayed == -28);
  CHECK(b.timed);
  CHECK(b.lateness.max() == 50'000);
  CHECK(b.op_bound_lateness.max() == 20'000);
  CHECK(b.op_bound_lateness.count() == 1);
  REQUIRE(b.timeline.size() == 1);
  CHECK(b.timeline[0].bytes_written == 4096);
  CHECK(b.stopped == "ENOSPC on the target");
  CHECK(b.remote_waits == 5);
  CHECK(b.realtime_threads == 3);
  CHECK(b.short_slice_threads == 4);
  CHECK(b.spread_threads == 7);
  CHECK(b.cpu_moves == 252);
  CHECK(b.started_ns == 123456789);
  const engine_stats& bring = b.engines[static_cast<size_t>(engine::io_uring)];
  CHECK(bring.requests == 9);
  CHECK(bring.as_syscalls == 2);
  CHECK(bring.fixed_buffers == 6);
}

TEST_CASE("bytes that are not a rank's stats are refused with one line") {
  const auto r = mpi::from_wire({0x01, 0x02, 0x03});
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("a rank's report does not read") == 0);
}
