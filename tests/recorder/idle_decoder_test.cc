// idle_decoder: the decoder thread's policy while it keeps up, and who brings it back. Each
// case works in a thread of its own, whose policy it may change; leaving SCHED_IDLE takes
// CAP_SYS_NICE, so these run as root, as the recorder does.
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "helpers.h"
#include "idle_decoder.h"

using fsrr::recorder::idle_decoder;
using fsrr::recorder::may_leave_idle;

namespace {

pid_t gettid_() {
  return static_cast<pid_t>(::syscall(SYS_gettid));
}

int policy_of(pid_t tid = 0) {
  return ::sched_getscheduler(tid) & ~SCHED_RESET_ON_FORK;
}

// Runs f on a new thread (its policy and nice value are its own) and waits for it.
template <typename F>
void on_own_thread(F f) {
  std::thread t(f);
  t.join();
}

}  // namespace

TEST_CASE("an idle decoder runs as SCHED_IDLE until it leaves, then as before, nice kept",
          "[idle]") {
  REQUIRE_IDLE_DECODER();
  // Seen on the thread, checked here: Catch's assertions belong to the test's own thread.
  int nice_set = -1, entered = 0, idle_flag = 0, while_idle = -1, after = -1, nice_after = -1;
  int again = 0;
  idle_decoder d(true);
  on_own_thread([&] {
    nice_set = ::setpriority(PRIO_PROCESS, 0, 3);  // this thread's nice value
    entered = d.enter();
    idle_flag = d.idle();
    while_idle = policy_of();
    d.leave();
    after = policy_of();
    nice_after = ::getpriority(PRIO_PROCESS, 0);
    again = d.enter();  // again: every enter counts
    d.leave();
  });
  CHECK(nice_set == 0);
  CHECK(entered);
  CHECK(idle_flag);
  CHECK(while_idle == SCHED_IDLE);
  CHECK(after == SCHED_OTHER);
  CHECK(nice_after == 3);
  CHECK(again);
  CHECK_FALSE(d.idle());
  CHECK(d.entered() == 2);
  CHECK(d.raised() == 0);
}

TEST_CASE("another thread raises an idle decoder once, and its leave then changes nothing",
          "[idle]") {
  REQUIRE_IDLE_DECODER();
  idle_decoder d(true);
  CHECK_FALSE(d.raise());  // not idle: nothing to raise
  std::atomic<int> step{0};
  std::atomic<pid_t> tid{0};
  std::atomic<int> after_leave{-1};
  std::atomic<bool> entered{false};
  std::thread decoder([&] {
    tid = gettid_();
    entered = d.enter();
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    d.leave();
    after_leave = policy_of();
  });
  while (step.load() != 1) std::this_thread::yield();
  CHECK(entered);
  CHECK(policy_of(tid) == SCHED_IDLE);
  CHECK(d.raise());
  CHECK(policy_of(tid) == SCHED_OTHER);
  CHECK_FALSE(d.idle());
  CHECK_FALSE(d.raise());
  step = 2;
  decoder.join();
  CHECK(after_leave == SCHED_OTHER);
  CHECK(d.entered() == 1);
  CHECK(d.raised() == 1);
}

TEST_CASE("a decoder told not to idle, or not SCHED_OTHER, keeps its policy", "[idle]") {
  REQUIRE_IDLE_DECODER();
  int entered = -1, during = -1, after = -1;
  idle_decoder off(false);
  on_own_thread([&] {
    entered = off.enter();
    during = policy_of();
    off.leave();
    after = policy_of();
  });
  CHECK(entered == 0);
  CHECK(during == SCHED_OTHER);
  CHECK(after == SCHED_OTHER);
  int batch_set = -1;
  idle_decoder d(true);
  on_own_thread([&] {
    const sched_param p{};
    batch_set = ::sched_setscheduler(0, SCHED_BATCH, &p);
    entered = d.enter();
    during = policy_of();
    d.leave();
    after = policy_of();
  });
  CHECK(batch_set == 0);
  CHECK(entered == 0);
  CHECK(during == SCHED_BATCH);
  CHECK(after == SCHED_BATCH);
  CHECK(d.entered() == 0);
}

TEST_CASE("an idle decoder keeps SCHED_RESET_ON_FORK as the thread had it", "[idle]") {
  REQUIRE_IDLE_DECODER();
  int set = -1, entered = 0, during = -1, after = -1;
  idle_decoder d(true);
  on_own_thread([&] {
    const sched_param p{};
    set = ::sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &p);
    entered = d.enter();
    during = ::sched_getscheduler(0);
    d.leave();
    after = ::sched_getscheduler(0);
  });
  CHECK(set == 0);
  CHECK(entered);
  CHECK(during == (SCHED_IDLE | SCHED_RESET_ON_FORK));
  CHECK(after == (SCHED_OTHER | SCHED_RESET_ON_FORK));
}

// Without CAP_SYS_NICE, a thread leaves SCHED_IDLE only if RLIMIT_NICE allows its nice value
// (nice n takes a limit of 20 - n): a decoder that could not come back never goes idle.
TEST_CASE("RLIMIT_NICE allows nice values down to 20 minus the limit", "[idle]") {
  CHECK(fsrr::recorder::nice_limit_allows(0, 20));
  CHECK_FALSE(fsrr::recorder::nice_limit_allows(0, 19));
  CHECK(fsrr::recorder::nice_limit_allows(5, 15));
  CHECK_FALSE(fsrr::recorder::nice_limit_allows(5, 14));
  CHECK(fsrr::recorder::nice_limit_allows(-3, 23));
  CHECK_FALSE(fsrr::recorder::nice_limit_allows(-3, 22));
  CHECK(fsrr::recorder::nice_limit_allows(19, 1));
  CHECK_FALSE(fsrr::recorder::nice_limit_allows(19, 0));
  CHECK(fsrr::recorder::nice_limit_allows(-20, RLIM_INFINITY));
}

TEST_CASE("without CAP_SYS_NICE and with an RLIMIT_NICE of 0 the decoder never idles", "[idle]") {
  REQUIRE_RECORDING();
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int failed = 0;
    const auto expect = [&](bool ok, int bit) {
      if (!ok) failed |= 1 << bit;
    };
    expect(may_leave_idle(), 0);  // root: CAP_SYS_NICE
    rlimit limit{};
    expect(::getrlimit(RLIMIT_NICE, &limit) == 0, 1);
    limit.rlim_cur = 0;  // under any hard limit: no privilege needed
    expect(::setrlimit(RLIMIT_NICE, &limit) == 0, 2);
    expect(may_leave_idle(), 3);  // the capability still
    __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
    expect(::syscall(SYS_capget, &h, caps) == 0, 4);
    caps[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
    expect(::syscall(SYS_capset, &h, caps) == 0, 5);
    expect(!may_leave_idle(), 6);
    idle_decoder d(true);
    expect(!d.enter(), 7);
    expect(policy_of() == SCHED_OTHER, 8);
    expect(d.entered() == 0, 9);
    ::_exit(::write(pipe_fds[1], &failed, sizeof failed) == sizeof failed ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  int failed = -1;
  const bool read_all = ::read(pipe_fds[0], &failed, sizeof failed) == sizeof failed;
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(read_all);
  CHECK(failed == 0);  // else the bits of the expectations that failed, in the child
}
