// Timing modes: when each op is due, and how precisely waiting hits that time.
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <thread>

#include <catch2/catch.hpp>

#include "replay_fixture.h"
#include "schedule.h"

using namespace fsrr;

namespace {

event at(uint64_t ts, uint64_t dur = 0) {
  event e;
  e.ts = ts;
  e.dur = dur;
  return e;
}

schedule_options mode(timing_mode m, double speed = 1.0) {
  schedule_options o;
  o.mode = m;
  o.speed = speed;
  return o;
}

}  // namespace

TEST_CASE("timing modes parse from their names and nothing else") {
  CHECK(parse_timing("faithful") == timing_mode::faithful);
  CHECK(parse_timing("think") == timing_mode::think);
  CHECK(parse_timing("afap") == timing_mode::afap);
  const auto fast = parse_timing("fast");
  REQUIRE_FALSE(fast);
  CHECK(fast.error().message == "--timing 'fast': expected faithful, think or afap");
}

TEST_CASE("a speed of zero or less is refused") {
  CHECK(check(mode(timing_mode::faithful, 1)));
  CHECK(check(mode(timing_mode::faithful, 0)).error().message == "--speed must be greater than 0");
  CHECK_FALSE(check(mode(timing_mode::faithful, -2)));
  CHECK_FALSE(check(mode(timing_mode::faithful, NAN)));
}

TEST_CASE("faithful: an op is due at its recorded offset from the first event") {
  schedule_clock c(mode(timing_mode::faithful), 5'000);
  c.start(1'000'000);
  thread_schedule s(c);
  CHECK(s.due(at(5'000)) == 1'000'000);
  CHECK(s.due(at(125'000)) == 1'120'000);
}

TEST_CASE("faithful: being late does not move later targets") {
  schedule_clock c(mode(timing_mode::faithful), 0);
  c.start(1'000'000);
  thread_schedule s(c);
  s.finished(at(0, 10), 9'000'000);  // finished very late
  CHECK(s.due(at(50'000)) == 1'050'000);
}

TEST_CASE("faithful: speed 2 halves every recorded offset") {
  schedule_clock c(mode(timing_mode::faithful, 2.0), 0);
  c.start(0);
  thread_schedule s(c);
  CHECK(s.due(at(1'000'000)) == 500'000);
}

TEST_CASE("think: an op is due its recorded gap after the previous op ended in the replay") {
  schedule_clock c(mode(timing_mode::think), 0);
  c.start(1'000'000);
  thread_schedule s(c);
  CHECK(s.due(at(0, 100)) == 1'000'000);  // a thread's first op: faithful
  s.finished(at(0, 100), 3'000'000);      // recorded end 100, replay end 3 ms
  CHECK(s.due(at(5'100)) == 3'005'000);   // recorded gap 5 µs
}

TEST_CASE("think: speed scales the gap") {
  schedule_clock c(mode(timing_mode::think, 4.0), 0);
  c.start(0);
  thread_schedule s(c);
  s.finished(at(0, 0), 1'000);
  CHECK(s.due(at(40'000)) == 11'000);
}

TEST_CASE("afap: nothing is ever due later") {
  schedule_clock c(mode(timing_mode::afap), 0);
  c.start(1'000'000);
  thread_schedule s(c);
  CHECK(s.due(at(9'000'000'000)) == 0);
  CHECK_FALSE(c.timed());
}

TEST_CASE("op-bound lateness: an op waits only for its thread's previous op to return") {
  const schedule_clock c(mode(timing_mode::faithful), 0);
  thread_schedule s(c);
  CHECK(s.op_bound(1'000, 300) == 0);    // the first op: on time
  CHECK(s.op_bound(1'200, 500) == 100);  // the previous one returned at 1,300
  CHECK(s.op_bound(1'700, 50) == 100);   // 1,800: the lag carries over
  CHECK(s.op_bound(1'900, 10) == 0);     // caught up: 1,850 was before it was due
  CHECK(s.op_bound(5'000, 0) == 0);
  CHECK(s.op_bound(5'000, 7) == 0);  // the one before took nothing: nothing held it up
  CHECK(s.op_bound(5'001, 0) == 6);
}

TEST_CASE("waiting returns at or just after the due time") {
  const std::atomic<bool> stop{false};
  const uint64_t due = monotonic_ns() + 3'000'000;
  const uint64_t now = wait_until(due, 100'000, stop);
  CHECK(now >= due);
  // one wake-up, late by microseconds on a quiet machine (bench/replay_lateness.sh measures
  // it): the bound catches a wrong unit, not a busy one
  CHECK(now - due < 1'000'000'000);
}

// Waits measured from their own start would each add the timer slack (50 us) and the
// wake-up latency: 500 of them ~25 ms or more. From one clock only the last wake-up's
// lateness remains, whatever else the machine runs. How little that is, is measured in
// bench/replay_lateness.sh; here, that the 500 waits end at the 500th due time.
TEST_CASE("waiting 500 times 1 ms from one clock does not accumulate error") {
  const std::atomic<bool> stop{false};
  const uint64_t start = monotonic_ns();
  uint64_t last = 0;
  for (int i = 1; i <= 500; ++i) last = wait_until(start + i * 1'000'000ull, 100'000, stop);
  const uint64_t due = start + 500'000'000ull;
  CHECK(last >= due);
  CHECK(last - due < 1'000'000'000);
}

TEST_CASE("a real-time thread's short waits sleep before a short spin, and never end early") {
  schedule_clock c(schedule_options{}, 0);
  CHECK(thread_schedule(c, true).short_spin_ns() == realtime_short_spin_ns);
  CHECK(thread_schedule(c, false).short_spin_ns() == UINT64_MAX);  // the whole spin
  const std::atomic<bool> stop{false};
  // 50 us to 2 ms ahead: up to short_wait_ns the spin is 20 us (or none), beyond it the
  // whole 100 us; each wait returns at its due time or after it
  for (const uint64_t short_spin : {realtime_short_spin_ns, uint64_t{0}}) {
    for (uint64_t ahead = 50'000; ahead <= 2'000'000; ahead += 50'000) {
      const uint64_t due = monotonic_ns() + ahead;
      CHECK(wait_until(due, 100'000, stop, short_spin) >= due);
    }
  }
}

TEST_CASE("a replay's only thread spins without yielding, and its waits never end early") {
  schedule_clock c(schedule_options{}, 0);
  CHECK(thread_schedule(c).yields());
  CHECK(thread_schedule(c, true).yields());
  CHECK_FALSE(thread_schedule(c, false, true).yields());
  CHECK_FALSE(thread_schedule(c, true, true).yields());
  const std::atomic<bool> stop{false};
  for (uint64_t ahead = 50'000; ahead <= 2'000'000; ahead += 150'000) {
    const uint64_t due = monotonic_ns() + ahead;
    const uint64_t now = wait_until(due, 100'000, stop, UINT64_MAX, false);
    CHECK(now >= due);
    CHECK(now - due < 1'000'000'000);
  }
}

TEST_CASE("a wait ends early when stop is set") {
  const std::atomic<bool> stop{true};
  const uint64_t t0 = monotonic_ns();
  wait_until(t0 + 5'000'000'000ull, 100'000, stop);
  CHECK(monotonic_ns() - t0 < 2'500'000'000);  // half the wait
}

TEST_CASE("realtime_policy: SCHED_FIFO while it lives, threads it starts ordinary, then as before") {
  if (!test::realtime_testable()) return;
  const auto policy = [] { return ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK; };
  REQUIRE(policy() == SCHED_OTHER);
  {
    const realtime_policy rt(true, realtime_issuer);
    REQUIRE(rt.active());
    CHECK(policy() == SCHED_FIFO);
    sched_param p{};
    REQUIRE(::sched_getparam(0, &p) == 0);
    CHECK(p.sched_priority == realtime_issuer);
    int started = -1;
    std::thread([&] { started = policy(); }).join();
    CHECK(started == SCHED_OTHER);  // a block loader must not take the CPU from a replay thread
  }
  CHECK(policy() == SCHED_OTHER);
  const realtime_policy off(false, realtime_issuer);
  CHECK_FALSE(off.active());
  CHECK(policy() == SCHED_OTHER);
}

TEST_CASE("thread_policy: SCHED_BATCH while it lives, then as before (no privilege needed)") {
  const auto policy = [] { return ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK; };
  REQUIRE(policy() == SCHED_OTHER);
  {
    const thread_policy batch(true, SCHED_BATCH, 0);
    CHECK(batch.active());
    CHECK(policy() == SCHED_BATCH);
  }
  CHECK(policy() == SCHED_OTHER);
}

TEST_CASE("short_slice: a 100 us slice while it lives, threads it starts too, then as before") {
  const uint64_t before = test::thread_slice_ns();
  if (before == 0) {  // a kernel before 6.12: nothing is asked of it, nothing is claimed
    const short_slice none(true);
    CHECK_FALSE(none.active());
    return;
  }
  {
    const short_slice s(true);
    REQUIRE(s.active());
    CHECK(test::thread_slice_ns() == replay_slice_ns);
    uint64_t started = 0;
    std::thread([&] { started = test::thread_slice_ns(); }).join();
    CHECK(started == replay_slice_ns);  // a lane starts with its dispatcher's slice
  }
  CHECK(test::thread_slice_ns() == before);
  const short_slice off(false);
  CHECK_FALSE(off.active());
  CHECK(test::thread_slice_ns() == before);
  {
    // only an ordinary thread: SCHED_BATCH (and SCHED_FIFO) are left as they are
    const thread_policy batch(true, SCHED_BATCH, 0);
    REQUIRE(batch.active());
    const short_slice s(true);
    CHECK_FALSE(s.active());
    CHECK((::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_BATCH);
  }
  CHECK(test::thread_slice_ns() == before);
  // the thread's nice value stays (raised here, in a thread of its own: anyone may raise it)
  int nice_inside = -100, nice_after = -100;
  std::thread([&] {
    const pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
    if (::setpriority(PRIO_PROCESS, tid, 7) != 0) return;
    {
      const short_slice s(true);
      if (!s.active()) return;
      nice_inside = ::getpriority(PRIO_PROCESS, tid);
    }
    nice_after = ::getpriority(PRIO_PROCESS, tid);
  }).join();
  CHECK(nice_inside == 7);
  CHECK(nice_after == 7);
  // default_slice: a helper started with the short slice goes back to the kernel's
  {
    const short_slice s(true);
    REQUIRE(s.active());
    uint64_t helper = 0;
    std::thread([&] {
      default_slice();
      helper = test::thread_slice_ns();
    }).join();
    CHECK(helper == before);
  }
}
