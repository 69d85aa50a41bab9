// The dispatcher's path cache: resolved paths live in generations that are freed once the
// ops queued before their retirement are done, so its memory follows the ops in flight, not
// the trace's paths; and a replay resolves alike whatever the generation's size.
#include <sched.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "op_dispatch.h"
#include "replay_fixture.h"
#include "workloads.h"

using namespace fsrr;
using namespace fsrr::test;

TEST_CASE("the path cache frees a retired generation once the ops queued before it are done") {
  replay_fixture f;
  record_cp(f.trace, 40);  // /src, /dst and 40 files in each
  trace_reader r = or_throw(trace_reader::open(f.trace));
  target_root t = or_throw(target_root::open(f.target));
  path_cache c(r, t, 4);
  REQUIRE(r.path_count() > 80);
  std::vector<path_id> files;
  for (path_id id = 1; id < r.path_count() && files.size() < 12; ++id)
    if (r.path_string(id).starts_with("/dst/f")) files.push_back(id);
  REQUIRE(files.size() == 12);

  const resolved_path* first = c.get(files[0]);
  REQUIRE(first);
  CHECK(first->ok);
  CHECK(first->trace_path() == r.path_string(files[0]));
  CHECK(c.get(files[0]) == first);  // the same entry while its generation is current
  // "/", "/dst" and the file: its ancestors are resolved with it.
  CHECK(c.live_entries() == 3);
  REQUIRE(first->up);
  CHECK(first->up->trace_path() == "/dst");

  c.get(files[1]);
  CHECK(c.full());        // 4 entries
  progress_counter lane;  // the lane's ops: 2 are queued before the retirement
  c.retire({{&lane, 2}});
  CHECK_FALSE(c.full());
  // Asked for again, a path of the retired generation is resolved anew in the current one,
  // with its ancestors: the old entry stays for the ops that hold it.
  const resolved_path* again = c.get(files[0]);
  CHECK(again != first);
  CHECK(again->trace_path() == r.path_string(files[0]));
  CHECK(again->up != first->up);
  CHECK(first->trace_path() == r.path_string(files[0]));
  CHECK(c.live_entries() == 7);
  lane.advance();
  c.collect();
  CHECK(c.live_entries() == 7);  // one of the two ops still runs
  lane.advance();
  c.collect();
  CHECK(c.live_entries() == 3);
  CHECK(c.get(files[0]) == again);

  // Retired with nothing queued, a generation goes at once; memory stays within a generation
  // however many paths are asked for.
  size_t most = 0;
  for (const path_id id : files) {
    const resolved_path* p = c.get(id);
    CHECK(p->trace_path() == r.path_string(id));
    CHECK(std::string(p->name()) == r.path(id).name);
    if (c.full()) c.retire({});
    most = std::max(most, c.live_entries());
  }
  CHECK(most <= 5);  // at most 3 before the last get, which adds "/", "/dst" and the file
}

TEST_CASE("replays resolve alike when every op's paths outlive their generation") {
  engine_options o = afap();
  o.path_generation = 1;  // every few ops a new generation, and the old ones in flight
  SECTION("rsync: three processes, one lane each") {
    replay_fixture f;
    record_rsync(f.trace, 30);
    const replay_stats s = f.replay(o);
    CHECK(s.stopped.empty());
    CHECK(s.mismatches == 0);
    CHECK(s.threads == 3);
    CHECK(s.backend == "lanes");
    for (int i = 0; i < 30; ++i) {
      CHECK(f.size(fmt::format("dst/f{}", i)) == static_cast<long long>(file_size(i)));
      CHECK_FALSE(f.exists(fmt::format("dst/.f{}.XXXXXX", i)));
    }
  }
  for (const bool ahead : {true, false}) {
    SECTION(fmt::format("cp: one thread, settled {}", ahead ? "ahead" : "inline")) {
      replay_fixture f;
      record_cp(f.trace, 40);
      o.decode_ahead = ahead;
      const replay_stats s = f.replay(o);
      // A helper thread settles ahead only where it has a CPU of its own.
      cpu_set_t cpus;
      REQUIRE(::sched_getaffinity(0, sizeof cpus, &cpus) == 0);
      CHECK(s.backend == (ahead && CPU_COUNT(&cpus) > 1 ? "settled-ahead" : "inline"));
      CHECK(s.stopped.empty());
      CHECK(s.mismatches == 0);
      CHECK(count(s, op::openat) == 82);
      for (int i = 0; i < 40; ++i)
        CHECK(f.size(fmt::format("dst/f{}", i)) == static_cast<long long>(file_size(i)));
    }
  }
}
