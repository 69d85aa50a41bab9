// Recorded workloads, written as the recorder would record them, replayed on tmpfs: the end
// state is what the workload left, and every result matches the recording.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "loop_fs.h"
#include "replay.h"
#include "replay_fixture.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "workloads.h"

using namespace fsrr;
using namespace fsrr::test;

TEST_CASE("a recorded cp -a replays with every result matching and the copy in place") {
  replay_fixture f;
  record_cp(f.trace, 40);
  const replay_stats s = f.replay();
  CHECK(s.stopped.empty());
  CHECK(s.mismatches == 0);
  for (const auto& m : s.first_mismatches)
    FAIL_CHECK(fmt::format("{} {}: {} vs {}", name(m.kind), m.path, m.recorded, m.replayed));
  CHECK(s.threads == 1);
  CHECK(count(s, op::openat) == 82);  // the probe of /dst, /src, 2 per file
  CHECK(count(s, op::copy_file_range) == 40 + 32);
  CHECK(s.files == 40);
  uint64_t total = 0;
  for (int i = 0; i < 40; ++i) {
    CHECK(f.size(fmt::format("dst/f{}", i)) == static_cast<long long>(file_size(i)));
    CHECK((f.mode(fmt::format("dst/f{}", i)) & 07777) == 0644);
    total += file_size(i);
  }
  CHECK((f.mode("dst") & 07777) == 0755);
  CHECK(s.bytes_written == total);
  CHECK(s.bytes_read == total);
}

TEST_CASE("a recorded rsync replays across three processes in recorded order") {
  replay_fixture f;
  record_rsync(f.trace, 30);
  const replay_stats s = f.replay();
  CHECK(s.stopped.empty());
  CHECK(s.mismatches == 0);
  for (const auto& m : s.first_mismatches)
    FAIL_CHECK(fmt::format("{} {}: {} vs {}", name(m.kind), m.path, m.recorded, m.replayed));
  CHECK(s.threads == 3);
  for (int i = 0; i < 30; ++i) {
    CHECK(f.size(fmt::format("dst/f{}", i)) == static_cast<long long>(file_size(i)));
    CHECK_FALSE(f.exists(fmt::format("dst/.f{}.XXXXXX", i)));
  }
  CHECK(count(s, op::lstat) == 60);
}

TEST_CASE("each local loop replays a recorded cp -a alike, and a trace of three threads takes lanes") {
  for (const replay_loop loop :
       {replay_loop::inline_single, replay_loop::settled_ahead, replay_loop::lanes}) {
    SECTION(std::string(name(loop))) {
      replay_fixture f;
      record_cp(f.trace, 40);
      const replay_stats s = f.replay(afap(), {}, loop);
      CHECK(s.backend == name(loop));
      CHECK(s.stopped.empty());
      CHECK(s.mismatches == 0);
      CHECK(s.threads == 1);
      CHECK(count(s, op::openat) == 82);
      CHECK(count(s, op::copy_file_range) == 40 + 32);
      for (int i = 0; i < 40; ++i)
        CHECK(f.size(fmt::format("dst/f{}", i)) == static_cast<long long>(file_size(i)));
    }
  }
  SECTION("three threads asked to run inline") {
    replay_fixture f;
    record_rsync(f.trace, 30);
    const replay_stats s = f.replay(afap(), {}, replay_loop::inline_single);
    CHECK(s.backend == "lanes");
    CHECK(s.threads == 3);
    CHECK(s.mismatches == 0);
  }
}

TEST_CASE("a recorded dd oflag=sync replays its synchronous writes") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(3000, 3000, 1);
    b.tree_dir("/dst");
    const file_id out = b.file(7);
    event& o = b.next(t, op::openat, 1);
    o.path = b.path("/dst/out");
    o.file = out;
    o.flags = O_WRONLY | O_CREAT | O_TRUNC | O_SYNC;
    o.mode = 0644;
    for (int k = 0; k < 8; ++k) {
      event& w = b.next(t, op::write, 1 << 20);
      w.fd = 1;
      w.file = out;
      w.offset = int64_t{k} << 20;
      w.size = 1 << 20;
    }
    b.next(t, op::close).fd = 1;
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::write) == 8);
  CHECK(f.size("dst/out") == 8 << 20);
  CHECK(s.bytes_written == 8u << 20);
}

TEST_CASE("a multi-threaded writer replays on one thread per recorded thread") {
  replay_fixture f;
  constexpr int workers = 4;
  {
    trace_builder b(f.trace);
    const thread_id main = b.thread(4000, 4000, 9);
    std::vector<thread_id> t;
    for (int k = 0; k < workers; ++k) t.push_back(b.thread(4001 + k, 4000, 9));
    b.tree_dir("/out");
    const file_id shared = b.file(50);
    event& o = b.at(main, 1'000, op::openat, 3);
    o.path = b.path("/out/shared");
    o.file = shared;
    o.flags = O_RDWR | O_CREAT;
    o.mode = 0644;
    for (int k = 0; k < workers; ++k) {
      event& c = b.at(main, 10'000 + k * 1'000, op::clone, 4001 + k, 500);
      c.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_THREAD | CLONE_SIGHAND;
      c.aux = 9;
    }
    // The workers' ops overlap in time: each thread at its own pace.
    for (int k = 0; k < workers; ++k) {
      const file_id own = b.file(60 + k);
      uint64_t ts = 20'000 + k * 3'000;
      event& oo = b.at(t[k], ts, op::openat, 4 + k, 5'000);
      oo.path = b.path(fmt::format("/out/t{}", k));
      oo.file = own;
      oo.flags = O_WRONLY | O_CREAT | O_TRUNC;
      oo.mode = 0644;
      for (int c = 0; c < 16; ++c) {
        event& w = b.at(t[k], ts += 7'000, op::pwrite64, 65536, 5'000);
        w.fd = 4 + k;
        w.file = own;
        w.offset = c * 65536;
        w.size = 65536;
      }
      event& ws = b.at(t[k], ts += 7'000, op::pwrite64, 65536, 5'000);
      ws.fd = 3;
      ws.file = shared;
      ws.offset = k * 65536;
      ws.size = 65536;
      event& fs = b.at(t[k], ts += 7'000, op::fsync, 0, 5'000);
      fs.fd = 4 + k;
      fs.file = own;
      event& cl = b.at(t[k], ts += 7'000, op::close, 0, 1'000);
      cl.fd = 4 + k;
      cl.file = own;
      b.at(t[k], ts += 2'000, op::exit);
    }
    event& st = b.at(main, 1'000'000, op::fstat);
    st.fd = 3;
    st.file = shared;
    event& cl = b.at(main, 1'010'000, op::close);
    cl.fd = 3;
    cl.file = shared;
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.stopped.empty());
  CHECK(s.mismatches == 0);
  for (const auto& m : s.first_mismatches)
    FAIL_CHECK(fmt::format("{} {}: {} vs {}", name(m.kind), m.path, m.recorded, m.replayed));
  CHECK(s.threads == workers + 1);
  CHECK(count(s, op::pwrite64) == workers * 17);
  for (int k = 0; k < workers; ++k) CHECK(f.size(fmt::format("out/t{}", k)) == 1 << 20);
  CHECK(f.size("out/shared") == workers * 65536);
}

TEST_CASE("the same trace and seed write the same bytes, another seed writes others") {
  replay_fixture a, b, c;
  for (auto* f : {&a, &b, &c}) record_rsync(f->trace, 5);
  data_spec d;
  d.kind = data_kind::random;
  d.seed = 7;
  a.replay(afap(), d);
  b.replay(afap(), d);
  d.seed = 8;
  c.replay(afap(), d);
  CHECK(test::run("cmp -s " + a.target + "/dst/f3 " + b.target + "/dst/f3") == 0);
  CHECK(test::run("cmp -s " + a.target + "/dst/f3 " + c.target + "/dst/f3") != 0);
}

TEST_CASE("recorded copies replay on ext4 xfs and btrfs with only reflink results differing") {
  if (!require_root("mounting loop file systems")) return;
  for (const char* type : {"ext4", "xfs", "btrfs"}) {
    SECTION(type) {
      loop_fs fs(type, 320);
      for (auto record : {record_cp, record_rsync}) {
        replay_fixture f(fs.path() + "/target");
        ::rmdir(f.target.c_str());
        ::mkdir(f.target.c_str(), 0755);
        record(f.trace, 25);
        const replay_stats s = f.replay();
        CHECK(s.stopped.empty());
        // tmpfs refused the recorded reflinks; xfs and btrfs can make them.
        CHECK(s.mismatches == s.ops[static_cast<size_t>(op::ioctl)].mismatches);
        for (int i = 0; i < 25; ++i)
          CHECK(f.size(fmt::format("dst/f{}", i)) == static_cast<long long>(file_size(i)));
        test::remove_tree(f.target);
      }
    }
  }
}

TEST_CASE("run_replay prepares the tree then replays the events and reports them") {
  replay_fixture f;
  record_cp(f.trace, 10);
  trace_reader r = or_throw(trace_reader::open(f.trace));
  replay_options o;
  o.target = f.target;
  o.timing = "afap";
  const replay_outcome out = or_throw(run_replay(r, o));
  CHECK(out.status == 0);
  CHECK(out.report.prepare.files == 10);
  const auto j = nlohmann::json::parse(report_json(out.report));
  CHECK(j["ops"]["openat"]["count"] == 22);
  CHECK(j["mismatches"] == 0);
  CHECK(j["prepare"]["files"] == 10);
  CHECK(j["backend"] != "lanes");  // one recorded thread: inline or settled ahead
  CHECK_FALSE(j.contains("lateness_ns"));
  CHECK(format_outcome(out).find("copy_file_range") != std::string::npos);
  CHECK(f.size("dst/f3") == static_cast<long long>(file_size(3)));
}

TEST_CASE("a recorded cp -a replays alike when the replaying thread decodes it too") {
  replay_fixture f;
  record_cp(f.trace, 40);
  engine_options o = afap();
  o.decode_ahead = false;
  const replay_stats s = f.replay(o);
  CHECK(s.backend == "inline");
  CHECK(s.stopped.empty());
  CHECK(s.mismatches == 0);
  CHECK(s.threads == 1);
  CHECK(count(s, op::openat) == 82);  // the probe of /dst, /src, 2 per file
  CHECK(count(s, op::copy_file_range) == 40 + 32);
  for (int i = 0; i < 40; ++i)
    CHECK(f.size(fmt::format("dst/f{}", i)) == static_cast<long long>(file_size(i)));
}
