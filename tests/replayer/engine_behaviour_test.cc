// How the engine reports differences, stops, stays confined and keeps time.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "cpu_spread.h"
#include "loop_fs.h"
#include "replay_fixture.h"
#include "trace_builder.h"
#include "workloads.h"

using namespace fsrr;
using namespace fsrr::test;

namespace {

// Opens /missing (recorded as success, absent from the tree), then reads it.
void record_missing_file(const std::string& path) {
  trace_builder b(path);
  const thread_id t = b.thread(1, 1, 1);
  const file_id f = b.file(3);
  event& o = b.next(t, op::openat, 3);
  o.path = b.path("/missing");
  o.file = f;
  event& r = b.next(t, op::read, 100);
  r.fd = 3;
  r.file = f;
  r.size = 4096;
  b.next(t, op::close).fd = 3;
  b.finish();
}

// One thread writing `count` 4 KiB blocks at recorded intervals of `gap_ns`.
void record_paced(const std::string& path, int count, uint64_t gap_ns) {
  trace_builder b(path);
  const thread_id t = b.thread(1, 1, 1);
  b.tree_dir("/d");
  const file_id f = b.file(3);
  event& o = b.at(t, 0, op::openat, 3, 10'000);
  o.path = b.path("/d/paced");
  o.file = f;
  o.flags = O_WRONLY | O_CREAT;
  o.mode = 0644;
  for (int i = 1; i <= count; ++i) {
    event& w = b.at(t, i * gap_ns, op::write, 4096, 20'000);
    w.fd = 3;
    w.file = f;
    w.offset = (i - 1) * 4096;
    w.size = 4096;
  }
  b.finish();
}

}  // namespace

TEST_CASE("a result that differs from the recording is counted and listed") {
  replay_fixture f;
  record_missing_file(f.trace);
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 3);
  CHECK(s.ops[static_cast<size_t>(op::openat)].mismatches == 1);
  CHECK(s.ops[static_cast<size_t>(op::openat)].errors == 1);
  REQUIRE(s.first_mismatches.size() == 3);
  CHECK(s.first_mismatches[0].kind == op::openat);
  CHECK(s.first_mismatches[0].path == "/missing");
  CHECK(s.first_mismatches[0].recorded == 3);
  CHECK(s.first_mismatches[0].replayed == -ENOENT);
  CHECK(s.first_mismatches[1].kind == op::read);
  CHECK(s.first_mismatches[1].replayed == -EBADF);
  CHECK(s.stopped.empty());
}

TEST_CASE("strict mode stops at the first mismatch") {
  replay_fixture f;
  record_missing_file(f.trace);
  engine_options o = afap();
  o.strict = true;
  const replay_stats s = f.replay(o);
  CHECK(s.mismatches == 1);
  CHECK(s.stopped.find("--strict: openat /missing") == 0);
}

TEST_CASE("ENOSPC on the target stops the replay with a partial report") {
  if (!require_root("mounting a small tmpfs")) return;
  loop_fs small("tmpfs", 2);
  replay_fixture f(small.path() + "/target");
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    const file_id out = b.file(9);
    event& o = b.next(t, op::openat, 3);
    o.path = b.path("/big");
    o.file = out;
    o.flags = O_WRONLY | O_CREAT;
    o.mode = 0644;
    for (int k = 0; k < 64; ++k) {
      event& w = b.next(t, op::write, 1 << 16);
      w.fd = 3;
      w.file = out;
      w.offset = k << 16;
      w.size = 1 << 16;
    }
    b.next(t, op::close).fd = 3;
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.stopped == "ENOSPC on the target: write /big");
  CHECK(count(s, op::write) < 64);
  CHECK(count(s, op::write) >= 30);
  CHECK(s.bytes_written > 1u << 20);
  CHECK(count(s, op::close) == 0);
}

TEST_CASE("a symlink planted by an earlier op cannot redirect a later write outside") {
  replay_fixture f;
  const std::string victim = f.dir / "victim";
  {
    FILE* v = std::fopen(victim.c_str(), "w");
    std::fputs("keep", v);
    std::fclose(v);
  }
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    event& l1 = b.next(t, op::symlink);
    l1.path = b.path("/abs");
    l1.aux = b.str(victim);
    event& l2 = b.next(t, op::symlink);
    l2.path = b.path("/rel");
    l2.aux = b.str("../victim");
    event& l3 = b.next(t, op::symlink);
    l3.path = b.path("/dir");
    l3.aux = b.str(f.dir.path());
    int fd = 3;
    for (const char* p : {"/abs", "/rel", "/dir/victim", "/dir/new"}) {
      event& o = b.next(t, op::openat, fd);
      o.path = b.path(p);
      o.flags = O_WRONLY | O_CREAT | O_TRUNC;
      o.mode = 0644;
      event& w = b.next(t, op::write, 100);
      w.fd = fd;
      w.size = 100;
      ++fd;
    }
    event& tr = b.next(t, op::truncate);
    tr.path = b.path("/rel");
    event& ch = b.next(t, op::chmod);
    ch.path = b.path("/abs");
    ch.mode = 0777;
    event& mk = b.next(t, op::mkdir);
    mk.path = b.path("/dir/made");
    mk.mode = 0755;
    event& mv = b.next(t, op::rename);
    mv.path = b.path("/rel");
    mv.path2 = b.path("/../escaped");
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches > 0);
  struct stat st;
  REQUIRE(::stat(victim.c_str(), &st) == 0);
  CHECK(st.st_size == 4);
  CHECK((st.st_mode & 0777) == 0644);
  CHECK(::access((f.dir / "new").c_str(), F_OK) != 0);
  CHECK(::access((f.dir / "made").c_str(), F_OK) != 0);
  CHECK(::access((f.dir / "escaped").c_str(), F_OK) != 0);
  CHECK(f.mode("rel") != 0);  // the symlink itself stays where it was
}

TEST_CASE("faithful timing issues each op at its recorded offset from the start") {
  replay_fixture f;
  record_paced(f.trace, 20, 10'000'000);  // 200 ms
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  const replay_stats s = f.replay(o);
  CHECK(s.mismatches == 0);
  CHECK(s.wall_ns >= 200'000'000);
  CHECK(s.lateness.count() == 21);
  // No later than its latest op was late (a busy machine makes ops late, and that is
  // measured), plus what comes before the first op and after the last: reading the trace,
  // starting and joining threads, which a busy machine also slows (20 ms were once short by
  // 0.8 ms with two builds beside). A wrong unit would be a thousand times off.
  CHECK(s.wall_ns <= 200'000'000 + s.lateness.max() + 1'000'000'000);
}

namespace {

// As the kernel has it.
int calling_thread_policy() {
  return ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
}

}  // namespace

TEST_CASE("realtime: a timed replay's threads run SCHED_FIFO, and the caller's policy comes back") {
  if (!realtime_testable()) return;
  REQUIRE(calling_thread_policy() == SCHED_OTHER);
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  o.realtime = true;
  {
    replay_fixture f;
    record_rsync(f.trace, 6);  // generator, sender, receiver
    const replay_stats s = f.replay(o);
    CHECK(s.mismatches == 0);
    CHECK(s.threads == 3);
    CHECK(s.realtime_threads == 4);  // the three replay threads and the dispatcher
    CHECK(calling_thread_policy() == SCHED_OTHER);
    o.timing.mode = timing_mode::think;
    replay_fixture g;
    record_rsync(g.trace, 6);
    CHECK(g.replay(o).realtime_threads == 4);
    CHECK(calling_thread_policy() == SCHED_OTHER);
    o.timing.mode = timing_mode::faithful;
  }
  {
    replay_fixture f;
    record_paced(f.trace, 5, 1'000'000);  // one thread: issued from the calling thread
    const replay_stats s = f.replay(o);
    CHECK(s.mismatches == 0);
    CHECK(s.threads == 1);
    CHECK(s.realtime_threads == 1);
    CHECK(calling_thread_policy() == SCHED_OTHER);
  }
  {
    replay_fixture f;
    record_rsync(f.trace, 6);
    o.timing.mode = timing_mode::afap;  // nothing is due: nothing to be prompt for
    CHECK(f.replay(o).realtime_threads == 0);
    o.timing.mode = timing_mode::faithful;
    o.realtime = false;
    CHECK(f.replay(o).realtime_threads == 0);
  }
}

TEST_CASE("a timed replay's ordinary threads run with short slices, and the caller's comes back") {
  const uint64_t before = thread_slice_ns();
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  {
    replay_fixture f;
    record_rsync(f.trace, 6);  // generator, sender, receiver
    const replay_stats s = f.replay(o);
    CHECK(s.mismatches == 0);
    CHECK(s.threads == 3);
    CHECK(s.realtime_threads == 0);
    // the three replay threads, where the kernel has slices to set (the dispatcher keeps its
    // own: a woken replay thread preempts it)
    CHECK(s.short_slice_threads == (before ? 3u : 0u));
    CHECK(thread_slice_ns() == before);
    o.timing.mode = timing_mode::afap;  // nothing is due: left as it is
    CHECK(f.replay(o).short_slice_threads == 0);
    o.timing.mode = timing_mode::faithful;
  }
  {
    replay_fixture f;
    record_paced(f.trace, 5, 1'000'000);  // one thread: issued from the calling thread
    const replay_stats s = f.replay(o);
    CHECK(s.mismatches == 0);
    CHECK(s.short_slice_threads == (before ? 1u : 0u));
    CHECK(thread_slice_ns() == before);
  }
  if (!realtime_testable()) return;
  o.realtime = true;  // SCHED_FIFO threads have no slice
  replay_fixture f;
  record_rsync(f.trace, 6);
  const replay_stats s = f.replay(o);
  CHECK(s.realtime_threads == 4);
  CHECK(s.short_slice_threads == 0);
  CHECK(thread_slice_ns() == before);
}

TEST_CASE(
    "only a timed replay's ordinary threads move off a shared CPU, and the caller's mask stays") {
  cpu_set_t before;
  CPU_ZERO(&before);
  REQUIRE(::sched_getaffinity(0, sizeof before, &before) == 0);
  const auto mask_kept = [&] {
    cpu_set_t now;
    CPU_ZERO(&now);
    return ::sched_getaffinity(0, sizeof now, &now) == 0 && CPU_EQUAL(&now, &before);
  };
  const auto replay = [](const engine_options& o) {
    replay_fixture f;  // each replay a target of its own
    record_rsync(f.trace, 40);
    return f.replay(o);
  };
  const bool cpus = cpu_spread(true).on();  // two CPUs or more to spread over (CI has two)
  engine_options o = afap();
  // afap: nothing spins before an op, and its threads are SCHED_BATCH
  replay_stats s = replay(o);
  CHECK(s.mismatches == 0);
  CHECK(s.spread_threads == 0);
  CHECK(s.cpu_moves == 0);
  CHECK(mask_kept());
  o.timing.mode = timing_mode::faithful;
  s = replay(o);
  CHECK(s.mismatches == 0);
  CHECK(s.threads == 3);
  CHECK(s.spread_threads == (cpus ? 3u : 0u));  // each replay thread, not the dispatcher
  CHECK(mask_kept());
  o.spread = false;  // MPI ranks that share a node
  s = replay(o);
  CHECK(s.mismatches == 0);
  CHECK(s.spread_threads == 0);
  CHECK(s.cpu_moves == 0);
  o.spread = true;
  if (!realtime_testable()) return;
  o.realtime = true;  // the kernel moves a waiting real-time thread itself
  s = replay(o);
  CHECK(s.mismatches == 0);
  CHECK(s.realtime_threads == 4);
  CHECK(s.spread_threads == 0);
  CHECK(s.cpu_moves == 0);
  CHECK(mask_kept());
}

TEST_CASE("replay --realtime where SCHED_FIFO is not allowed stops before the tree, in one line") {
  if (!realtime_testable()) return;
  replay_fixture f;
  record_paced(f.trace, 3, 1'000'000);
  const std::string log = f.dir / "log";
  // No CAP_SYS_NICE and no RLIMIT_RTPRIO: what an ordinary user has.
  const int status = run(fmt::format(
      "prlimit --rtprio=0:0 setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice "
      "{} replay --realtime --no-progress {} {} >{} 2>&1",
      FSRR_BIN, f.trace, f.target, log));
  CHECK(status == 1);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.rfind("fsrr: --realtime: this process may not use SCHED_FIFO (Operation not "
                   "permitted)", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK_FALSE(f.exists("d"));  // the tree was not begun
  // The same command with the capability replays.
  CHECK(run(fmt::format("{} replay --realtime --no-progress {} {} >{} 2>&1", FSRR_BIN, f.trace,
                        f.target, log)) == 0);
  CHECK(f.size("d/paced") == 3 * 4096);
}

TEST_CASE("the timeline puts each op, and the bytes it moved, in the 100 ms slice it began in") {
  replay_fixture f;
  {
    // an open at 0, then 4 KiB writes at 25, 75, 125, 175, 225 and 275 ms: mid-slice, so that
    // a little lateness cannot move one
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_dir("/d");
    const file_id file = b.file(3);
    event& o = b.at(t, 0, op::openat, 3, 10'000);
    o.path = b.path("/d/paced");
    o.file = file;
    o.flags = O_WRONLY | O_CREAT;
    o.mode = 0644;
    for (int i = 0; i < 6; ++i) {
      event& w = b.at(t, 25'000'000 + i * 50'000'000ull, op::write, 4096, 20'000);
      w.fd = 3;
      w.file = file;
      w.offset = i * 4096;
      w.size = 4096;
    }
    b.finish();
  }
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  const replay_stats s = f.replay(o);
  CHECK(s.mismatches == 0);
  REQUIRE(s.timeline.size() == 3);
  CHECK(s.timeline[0].ops == 3);
  CHECK(s.timeline[1].ops == 2);
  CHECK(s.timeline[2].ops == 2);
  for (const timeline_slice& t : s.timeline) {
    CHECK(t.bytes_written == 8192);
    CHECK(t.bytes_read == 0);
  }
}

TEST_CASE("the timeline adds up to the replay's ops and bytes") {
  replay_fixture f;
  record_rsync(f.trace, 30);
  const replay_stats s = f.replay();
  uint64_t ops = 0, read = 0, written = 0, counted = 0;
  for (const timeline_slice& t : s.timeline) {
    ops += t.ops;
    read += t.bytes_read;
    written += t.bytes_written;
  }
  for (const op_stats& o : s.ops) counted += o.count;
  CHECK(ops == counted);
  CHECK(read == s.bytes_read);
  CHECK(written == s.bytes_written);
  CHECK(written > 0);
}

TEST_CASE("speed 4 replays a faithful trace in a quarter of the time") {
  replay_fixture f;
  record_paced(f.trace, 20, 100'000'000);  // 2 s
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  o.timing.speed = 4;
  const replay_stats s = f.replay(o);
  CHECK(s.wall_ns >= 500'000'000);
  CHECK(s.lateness.count() == 21);
  // well short of the 2 s the trace takes at speed 1, lateness aside (a busy box's late
  // wake-ups are the lateness figure's business, bench/'s, not this test's)
  CHECK(s.wall_ns - std::min(s.wall_ns, s.lateness.max()) < 1'500'000'000);
}

TEST_CASE("think timing keeps the recorded gaps between one op's end and the next") {
  replay_fixture f;
  record_paced(f.trace, 10, 10'000'000);  // gaps of 10 ms minus 20 µs
  engine_options o = afap();
  o.timing.mode = timing_mode::think;
  const replay_stats s = f.replay(o);
  CHECK(s.wall_ns >= 99'000'000);
  CHECK(s.wall_ns < 1'000'000'000);  // gaps of 10 ms, not 100 ms: bounds that catch a wrong
                                     // unit, not a busy machine (timing figures: bench/)
}

TEST_CASE("afap does not wait and reports no lateness") {
  replay_fixture f;
  record_paced(f.trace, 10, 300'000'000);  // 3 s recorded
  const replay_stats s = f.replay();
  CHECK(s.wall_ns < 1'500'000'000);  // half of what waiting would take
  CHECK_FALSE(s.timed);
  CHECK(s.lateness.count() == 0);
  CHECK(s.op_bound_lateness.count() == 0);
}

TEST_CASE("ops invisible to syscall tracing are counted as unreplayable") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.next(t, op::mmap, 0x7f0000000000).fd = -1;
    b.next(t, op::io_uring_setup, 5);
    b.next(t, op::chdir).path = b.path("/");
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.unreplayable[static_cast<size_t>(op::mmap)] == 1);
  CHECK(s.unreplayable[static_cast<size_t>(op::io_uring_setup)] == 1);
  CHECK(s.skipped[static_cast<size_t>(op::chdir)] == 1);
  CHECK(s.mismatches == 0);
}

TEST_CASE("a cancel request stops the replay and says so") {
  replay_fixture f;
  record_paced(f.trace, 10, 300'000'000);  // 3 s recorded
  std::atomic<bool> cancel{true};
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  o.cancel = &cancel;
  const replay_stats s = f.replay(o);
  CHECK(s.stopped == "interrupted");
  CHECK(s.wall_ns < 1'500'000'000);  // half of the recorded 3 s
}

TEST_CASE("setxattr by path sets the attribute on the file") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_file("/f", 100);
    event& sx = b.next(t, op::setxattr);
    sx.path = b.path("/f");
    sx.aux = b.str("user.fsrr");
    sx.size = 16;
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::setxattr) == 1);
  CHECK(::getxattr((f.target + "/f").c_str(), "user.fsrr", nullptr, 0) == 16);
}

TEST_CASE("getxattr by path returns the size of the file's attribute") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_file("/f", 100);
    event& sx = b.next(t, op::setxattr);
    sx.path = b.path("/f");
    sx.aux = b.str("user.fsrr");
    sx.size = 16;
    event& gx = b.next(t, op::getxattr, 16);
    gx.path = b.path("/f");
    gx.aux = b.str("user.fsrr");
    gx.size = 64;
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::getxattr) == 1);
  CHECK(s.ops[static_cast<size_t>(op::getxattr)].errors == 0);
}

TEST_CASE("a thread with ops after its exit event replays them on a new replay thread") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id a = b.thread(1, 1, 1);
    const thread_id c = b.thread(2, 2, 2);
    b.next(c, op::mkdir).path = b.path("/before");
    b.next(c, op::exit);
    b.next(a, op::mkdir).path = b.path("/other");
    b.next(c, op::mkdir).path = b.path("/after");
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.stopped.empty());
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::mkdir) == 3);
  CHECK(s.threads == 2);
  CHECK(S_ISDIR(f.mode("before")));
  CHECK(S_ISDIR(f.mode("after")));
}

TEST_CASE("a mkdir that lost a race to an overlapping mkdir of the same name loses it again") {
  // Two processes make one directory at once (python -m compileall's workers, __pycache__):
  // the one that started first made it, the other, overlapping it, met EEXIST. The first's
  // lane is busy with 64 MiB of writes before it; the loser waits for it all the same.
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id a = b.thread(1, 1, 1);
    const thread_id c = b.thread(2, 2, 2);
    const file_id big = b.file(10);
    event& o = b.at(a, 0, op::openat, 3, 1'000);
    o.path = b.path("/big");
    o.file = big;
    o.flags = O_WRONLY | O_CREAT;
    o.mode = 0644;
    for (int i = 0; i < 16; ++i) {
      event& w = b.at(a, 10'000 + i * 1'000, op::pwrite64, 4 << 20, 500);
      w.fd = 3;
      w.file = big;
      w.offset = static_cast<int64_t>(i) << 22;
      w.size = 4 << 20;
    }
    b.at(a, 100'000, op::mkdir, 0, 50'000).path = b.path("/d");
    b.at(c, 110'000, op::mkdir, -EEXIST, 10'000).path = b.path("/d");
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::mkdir) == 2);
  CHECK(s.ops[static_cast<size_t>(op::mkdir)].errors == 1);
  CHECK(S_ISDIR(f.mode("d")));
}

TEST_CASE("a symlink replaced between two ops leads the second to its new target") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_dir("/d1");
    b.tree_dir("/d2");
    const file_id link1 = b.file(10, S_IFLNK);
    event& l1 = b.next(t, op::symlink);
    l1.path = b.path("/l");
    l1.aux = b.str("d1");
    int name = 0;
    auto create = [&](const char* p) {
      event& o = b.next(t, op::openat, 3);
      o.path = b.path(p);
      o.file = b.file(20 + name++);
      o.flags = O_WRONLY | O_CREAT | O_EXCL;
      o.mode = 0644;
      b.next(t, op::close).fd = 3;
    };
    create("/l/a");
    event& rm = b.next(t, op::unlink);
    rm.path = b.path("/l");
    rm.file = link1;
    event& l2 = b.next(t, op::symlink);
    l2.path = b.path("/l");
    l2.aux = b.str("d2");
    create("/l/b");
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK(f.exists("d1/a"));
  CHECK(f.exists("d2/b"));
  CHECK_FALSE(f.exists("d1/b"));
}

TEST_CASE("a rename that asks for a whiteout leaves no device node behind") {
  if (!require_root("a whiteout needs CAP_MKNOD")) return;
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_file("/a", 10);
    event& mv = b.next(t, op::renameat2);
    mv.path = b.path("/a");
    mv.path2 = b.path("/b");
    mv.file = b.file(5);
    mv.flags = RENAME_WHITEOUT;
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK_FALSE(f.exists("a"));
  CHECK(f.size("b") == 10);
}

TEST_CASE("a stop thousands of ops into a single-thread trace ends right after that op") {
  replay_fixture f;
  constexpr int ops = 20'000, failing = 15'000;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    for (int i = 0; i < ops; ++i)
      b.next(t, op::mkdir, i == failing ? -EEXIST : 0).path = b.path(fmt::format("/d{}", i));
    b.finish();
  }
  engine_options o = afap();
  o.strict = true;
  const replay_stats s = f.replay(o);
  CHECK(s.stopped ==
        fmt::format("--strict: mkdir /d{} returned 0 where the recording had -17", failing));
  CHECK(count(s, op::mkdir) == failing + 1);
  CHECK(s.events == failing + 1);
  CHECK(f.exists(fmt::format("d{}", failing)));
  CHECK_FALSE(f.exists(fmt::format("d{}", failing + 1)));
}

TEST_CASE("an access ACL set with recorded permission bits gives the file that mode") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_file("/f", 10, 0600);
    event& sx = b.next(t, op::setxattr);
    sx.path = b.path("/f");
    sx.aux = b.str("system.posix_acl_access");
    sx.size = 28;
    sx.mode = acl_mode_present | 0751;
    b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK((f.mode("f") & 07777) == 0751);
}

TEST_CASE("xattr calls on a file's name leave the calling thread's working directory alone") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_dir("/d");
    b.tree_file("/d/f", 100);
    const file_id file = b.file(5);
    event& sx = b.next(t, op::setxattr);
    sx.path = b.path("/d/f");
    sx.file = file;
    sx.aux = b.str("user.fsrr");
    sx.size = 16;
    event& gx = b.next(t, op::getxattr, 16);
    gx.path = b.path("/d/f");
    gx.file = file;
    gx.aux = b.str("user.fsrr");
    gx.size = 64;
    event& lx = b.next(t, op::llistxattr, 10);
    lx.path = b.path("/d/f");
    lx.file = file;
    lx.size = 64;
    b.finish();
  }
  char before[4096], after[4096];
  REQUIRE(::getcwd(before, sizeof before));
  const replay_stats s = f.replay();
  REQUIRE(::getcwd(after, sizeof after));
  CHECK(std::string(after) == before);
  CHECK(s.mismatches == 0);
  CHECK(s.ops[static_cast<size_t>(op::getxattr)].errors == 0);
  CHECK(::getxattr((f.target + "/d/f").c_str(), "user.fsrr", nullptr, 0) == 16);
}

TEST_CASE("op-bound lateness: an op due 10 us after a 64 MiB write is late by the write's time") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    event& o = b.at(t, 0, op::openat, 3);
    o.path = b.path("/big");
    o.flags = O_WRONLY | O_CREAT | O_TRUNC;
    o.mode = 0644;
    event& w = b.at(t, 1'000'000, op::write, 64 << 20);  // recorded in 1 us
    w.fd = 3;
    w.size = 64 << 20;
    b.at(t, 1'010'000, op::close).fd = 3;
    b.finish();
  }
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  const replay_stats s = f.replay(o);
  CHECK(s.mismatches == 0);
  const uint64_t write_took = s.ops[static_cast<size_t>(op::write)].latency.max();
  REQUIRE(write_took > 10'000);  // 64 MiB take milliseconds anywhere
  // The open returns long before the write is due, and the write itself is on time; the
  // close, due 10 us after the write began, waits for it to return.
  CHECK(s.op_bound_lateness.count() == 3);
  CHECK(s.op_bound_lateness.percentile(0.5) == 0);
  CHECK(s.op_bound_lateness.max() == write_took - 10'000);
  // No replayer issues the close before the write has returned. (Op latencies are timed with
  // the TSC, lateness with CLOCK_MONOTONIC: they agree to well within 1%.)
  CHECK(s.lateness.max() >= s.op_bound_lateness.max() - s.op_bound_lateness.max() / 100);
}

TEST_CASE("a faithful replay lasts until the recording's last event, even one not issued") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.at(t, 0, op::mkdir).path = b.path("/d");
    b.at(t, 150'000'000, op::exit);
    b.finish();
  }
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  const replay_stats s = f.replay(o);
  CHECK(s.wall_ns >= 150'000'000);
  CHECK(s.lateness.count() == 1);  // only issued ops count for lateness
}

TEST_CASE("a faithful replay with more ops per thread than the queue limit replays them all") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id a = b.thread(1, 1, 1);
    const thread_id c = b.thread(2, 2, 2);
    for (int i = 0; i < 100; ++i) {
      b.at(a, i * 100'000, op::mkdir).path = b.path(fmt::format("/a{}", i));
      b.at(c, i * 100'000 + 50'000, op::mkdir).path = b.path(fmt::format("/c{}", i));
    }
    b.finish();
  }
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  o.timed_queue_limit = 16;
  const replay_stats s = f.replay(o);
  CHECK(s.stopped.empty());
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::mkdir) == 200);
  CHECK(s.wall_ns >= 9'950'000);
}

TEST_CASE("a cancel request stops a faithful multi-thread replay between sparse ops") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id a = b.thread(1, 1, 1);
    const thread_id c = b.thread(2, 2, 2);
    b.at(a, 0, op::mkdir).path = b.path("/a");
    b.at(c, 10'000'000'000, op::mkdir).path = b.path("/c");
    b.finish();
  }
  std::atomic<bool> cancel{false};
  engine_options o = afap();
  o.timing.mode = timing_mode::faithful;
  o.cancel = &cancel;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  const replay_stats s = f.replay(o);
  stopper.join();
  CHECK(s.stopped == "interrupted");
  CHECK(s.wall_ns < 5'000'000'000);  // half of the 10 s the second op waits for
  CHECK(f.exists("a"));
  CHECK_FALSE(f.exists("c"));
}
