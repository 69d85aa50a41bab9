// cpu_spread: replay threads that claim the CPU they spin on, and move off one another claims.
// Real threads on real CPUs, pinned where a case needs them; the machine needs two CPUs (CI's
// have two).
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "cpu_spread.h"
#include "ordering.h"
#include "schedule.h"
#include "temp_dir.h"

using namespace fsrr;

namespace {

std::vector<int> process_cpus() {
  cpu_set_t m;
  CPU_ZERO(&m);
  REQUIRE(::sched_getaffinity(0, sizeof m, &m) == 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &m)) cpus.push_back(c);
  return cpus;
}

bool two_cpus() {
  if (process_cpus().size() >= 2) return true;
  const char* ci = std::getenv("CI");
  REQUIRE_FALSE((ci && std::strcmp(ci, "true") == 0));  // CI's machines have two
  WARN("one CPU: nothing to spread over");
  return false;
}

// What the spread reads for the threads the machine runs: /proc/loadavg's form, with the count
// a case wants (the machine's own count moves with whatever else runs, ctest's other tests).
class load_file {
 public:
  explicit load_file(int running) { set(running); }
  void set(int running) { std::ofstream(path_) << "0.10 0.20 0.30 " << running << "/123 4567\n"; }
  const char* path() const { return path_.c_str(); }

 private:
  test::temp_dir dir_;
  std::string path_ = dir_ / "loadavg";
};

// In a thread of its own: what it says is checked after the join.
bool pin(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return ::sched_setaffinity(0, sizeof one, &one) == 0;
}

bool affinity_is(const std::vector<int>& cpus) {
  cpu_set_t m;
  CPU_ZERO(&m);
  if (::sched_getaffinity(0, sizeof m, &m) != 0) return false;
  cpu_set_t want;
  CPU_ZERO(&want);
  for (const int c : cpus) CPU_SET(c, &want);
  return CPU_EQUAL(&m, &want);
}

// A thread that holds a seat on `cpu` (pinned there, claimed) until released. What it saw is
// read on the main thread after the join (a REQUIRE in a thread would end the process).
class holder {
 public:
  holder(cpu_spread& s, int cpu)
      : t_([this, &s, cpu] {
          const cpu_seat seat(&s);  // its mask is the thread's as it starts, as a lane's
          pinned_ = pin(cpu);
          cpu_seat::take();
          claimed_ = cpu_seat::claimed();
          ready_.store(true);
          while (!go_.load()) std::this_thread::yield();
        }) {
    while (!ready_.load()) std::this_thread::yield();
  }
  ~holder() { release(); }
  void release() {
    go_.store(true);
    if (t_.joinable()) t_.join();
  }
  bool pinned() const { return pinned_; }
  int claimed() const { return claimed_; }

 private:
  std::atomic<bool> ready_{false}, go_{false};
  bool pinned_ = false;
  int claimed_ = -2;
  std::thread t_;
};

// What a thread pinned to `cpu` saw when it took a seat there.
struct taken {
  int claimed = -2;  // by the seat
  bool mask_restored = false;
  int after_leave = -2;
};

taken take_on(cpu_spread& s, int cpu, const std::vector<int>& mask,
              const std::function<void()>& while_seated = {}) {
  taken t;
  std::thread([&] {
    const cpu_seat seat(&s);
    if (!pin(cpu)) return;
    cpu_seat::take();
    t.claimed = cpu_seat::claimed();
    t.mask_restored = affinity_is(mask);
    if (while_seated) while_seated();
    cpu_seat::leave();
    t.after_leave = cpu_seat::claimed();
  }).join();
  return t;
}

}  // namespace

TEST_CASE("cpu_spread: a thread that finds its CPU claimed moves to a free one, then frees it") {
  if (!two_cpus()) return;
  const std::vector<int> cpus = process_cpus();
  const load_file load(0);  // nothing but these threads
  cpu_spread s(true, load.path());
  REQUIRE(s.on());
  const int home = cpus[0], next = cpus[1];
  holder first(s, home);
  REQUIRE(first.pinned());
  CHECK(first.claimed() == home);
  CHECK(s.claims(home) == 1);
  // a second thread on the same CPU moves to the next one of the mask, claimed before it went,
  // and its affinity is the process's again: it is not pinned there
  uint32_t claims_home = 0, claims_next = 0;
  const taken second = take_on(s, home, cpus, [&] {
    claims_home = s.claims(home);
    claims_next = s.claims(next);
  });
  CHECK(second.claimed == next);  // sched_getcpu() said so once it had moved
  CHECK(second.mask_restored);
  CHECK(claims_home == 1);
  CHECK(claims_next == 1);
  CHECK(s.moves() == 1);
  CHECK(s.seated() == 2);
  // leave() gives the claim up
  CHECK(second.after_leave == -1);
  CHECK(s.claims(next) == 0);
  // a thread bound to this CPU before it took its seat is kept to its own mask: it stays
  int bound_claimed = -2;
  bool bound_pinned = false;
  std::thread([&] {
    if (!(bound_pinned = pin(home))) return;
    const cpu_seat seat(&s);
    cpu_seat::take();
    bound_claimed = cpu_seat::claimed();
  }).join();
  REQUIRE(bound_pinned);
  CHECK(bound_claimed == home);
  CHECK(s.moves() == 1);
  // and a seat's end gives up what it holds
  first.release();
  CHECK(s.claims(home) == 0);
}

TEST_CASE("cpu_spread: with every other CPU claimed a thread stays, and moves once one is free") {
  if (!two_cpus()) return;
  const std::vector<int> cpus = process_cpus();
  const load_file load(0);
  cpu_spread s(true, load.path());
  const int home = cpus[0];
  std::vector<std::unique_ptr<holder>> others;
  for (size_t i = 1; i < cpus.size(); ++i) others.push_back(std::make_unique<holder>(s, cpus[i]));
  holder first(s, home);
  REQUIRE(first.pinned());
  int stayed_on = -2, moved_to = -2;
  uint32_t claims_while_shared = 0;
  uint64_t moves_while_shared = 99;
  bool pinned = false;
  std::thread([&] {
    const cpu_seat seat(&s);
    if (!(pinned = pin(home))) return;
    cpu_seat::take();
    stayed_on = cpu_seat::claimed();
    claims_while_shared = s.claims(home);
    moves_while_shared = s.moves();
    others.back()->release();  // that CPU's thread ends: its seat's claim goes
    cpu_seat::take();
    moved_to = cpu_seat::claimed();
  }).join();
  REQUIRE(pinned);
  CHECK(stayed_on == home);
  CHECK(claims_while_shared == 2);
  CHECK(moves_while_shared == 0);
  CHECK(moved_to == cpus.back());
  CHECK(s.moves() == 1);
  CHECK(s.claims(home) == 1);  // the first thread's, still held
}

TEST_CASE("cpu_spread: off, on one CPU, or a second seat in one thread: nothing is claimed") {
  cpu_spread off(false);
  CHECK_FALSE(off.on());
  int claimed = -2;
  std::thread([&] {
    const cpu_seat seat(&off);
    cpu_seat::take();
    claimed = cpu_seat::claimed();
  }).join();
  CHECK(claimed == -1);
  if (!two_cpus()) return;
  const std::vector<int> cpus = process_cpus();
  bool one_cpu_on = true, pinned = false;
  int outer = -2, inner_gone = -2;
  uint32_t claims_after_inner = 9, seated = 9;
  std::thread([&] {
    if (!(pinned = pin(cpus[0]))) return;  // one CPU to use: nothing to spread over
    one_cpu_on = cpu_spread(true).on();
    cpu_set_t all;
    CPU_ZERO(&all);
    for (const int c : cpus) CPU_SET(c, &all);
    ::sched_setaffinity(0, sizeof all, &all);
    cpu_spread s(true);
    const cpu_seat seat(&s);
    cpu_seat::take();
    outer = cpu_seat::claimed();
    {
      const cpu_seat inner(&s);  // inert: the thread has its seat
    }
    inner_gone = cpu_seat::claimed();
    claims_after_inner = outer >= 0 ? s.claims(outer) : 9;
    seated = s.seated();
  }).join();
  REQUIRE(pinned);
  CHECK_FALSE(one_cpu_on);
  CHECK(outer >= 0);
  CHECK(inner_gone == outer);
  CHECK(claims_after_inner == 1);
  CHECK(seated == 1);
}

TEST_CASE("cpu_spread: a wait's sleep gives the claim up, its spin takes it") {
  if (!two_cpus()) return;
  const load_file load(0);
  cpu_spread s(true, load.path());
  const std::atomic<bool> stop{false};
  int after_spin = -2, after_sleep = -2;
  progress_counter counter;
  std::thread([&] {
    const cpu_seat seat(&s);
    // 2 ms away: asleep until 100 us before, then spinning, claimed
    wait_until(monotonic_ns() + 2'000'000, 100'000, stop);
    after_spin = cpu_seat::claimed();
    // a wait for another thread's progress that has to sleep gives the claim up
    std::thread advance([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      counter.advance(1);
    });
    counter.wait(1, stop, 0);
    after_sleep = cpu_seat::claimed();
    advance.join();
  }).join();
  CHECK(after_spin >= 0);
  CHECK(after_sleep == -1);
}

TEST_CASE("cpu_spread: a free CPU that another program keeps busy is left alone while it does") {
  if (!two_cpus()) return;
  const std::vector<int> cpus = process_cpus();
  const int home = cpus[0], next = cpus[1];
  // two claimed threads, and one thread more than there are free CPUs besides them
  const int free_cpus = static_cast<int>(cpus.size()) - 1;
  load_file load(2 + free_cpus);
  cpu_spread s(true, load.path());
  CHECK(s.running() == 2 + free_cpus);
  holder first(s, home);
  REQUIRE(first.pinned());
  int stayed = -2, later = -2;
  uint64_t moves_busy = 99;
  std::thread([&] {
    const cpu_seat seat(&s);
    if (!pin(home)) return;
    cpu_seat::take();
    stayed = cpu_seat::claimed();
    moves_busy = s.moves();
    load.set(2);  // the other program's thread is gone; looked at again 200 us later
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    cpu_seat::take();
    later = cpu_seat::claimed();
  }).join();
  CHECK(stayed == home);
  CHECK(moves_busy == 0);
  CHECK(later == next);
  CHECK(s.moves() == 1);
}

TEST_CASE("cpu_spread: running threads come from /proc/loadavg, or every free CPU is idle") {
  if (!two_cpus()) return;
  CHECK(cpu_spread(true).running() >= 0);  // read (a count of 0 where procfs is not the kernel's)
  cpu_spread blind(true, "/nonexistent/loadavg");
  CHECK(blind.running() == -1);
  const int home = process_cpus()[0];
  holder first(blind, home);
  REQUIRE(first.pinned());
  int claimed = -2;
  std::thread([&] {
    const cpu_seat seat(&blind);
    if (!pin(home)) return;
    cpu_seat::take();
    claimed = cpu_seat::claimed();
  }).join();
  CHECK(claimed == process_cpus()[1]);
  CHECK(blind.moves() == 1);
}

TEST_CASE("cpu_spread: a seat that does not move claims its CPU for the others to see, and stays") {
  if (!two_cpus()) return;
  const std::vector<int> cpus = process_cpus();
  const load_file load(0);
  cpu_spread s(true, load.path());
  const int home = cpus[0], next = cpus[1];
  holder first(s, home);  // a replay thread there
  REQUIRE(first.pinned());
  int stayed = -2, moved = -2;
  uint32_t seated = 9;
  bool pinned = false;
  std::thread([&] {
    const cpu_seat seat(&s, /*moves=*/false);  // as the dispatcher's
    if (!(pinned = pin(home))) return;
    cpu_seat::take();
    stayed = cpu_seat::claimed();
    seated = s.seated();  // the moving ones only
  }).join();
  REQUIRE(pinned);
  CHECK(stayed == home);
  CHECK(s.moves() == 0);
  CHECK(seated == 1);
  // the other way round: a replay thread that finds it there moves
  std::atomic<bool> claimed{false}, done{false};
  bool still_pinned = false;
  std::thread still([&] {
    const cpu_seat seat(&s, false);
    if ((still_pinned = pin(next))) cpu_seat::take();
    claimed = true;
    while (!done) std::this_thread::yield();
  });
  while (!claimed) std::this_thread::yield();
  first.release();  // home is free again
  const taken t = take_on(s, next, cpus);
  done = true;
  still.join();
  REQUIRE(still_pinned);
  moved = t.claimed;
  CHECK(moved >= 0);  // the first unclaimed CPU after `next`: home on two CPUs
  CHECK(moved != next);
  CHECK(s.moves() == 1);
}

TEST_CASE("cpu_spread: where every CPU is claimed, a thread moves as soon as one is given up") {
  if (!two_cpus()) return;
  const std::vector<int> cpus = process_cpus();
  const int home = cpus[0];
  // the machine runs exactly the claimed threads (the two here and one per other CPU)
  load_file load(static_cast<int>(cpus.size()) + 1);
  cpu_spread s(true, load.path());
  std::vector<std::unique_ptr<holder>> others;
  for (size_t i = 1; i < cpus.size(); ++i) {
    others.push_back(std::make_unique<holder>(s, cpus[i]));
    REQUIRE(others.back()->pinned());
  }
  holder first(s, home);
  REQUIRE(first.pinned());
  int stayed = -2, moved = -2;
  bool pinned = false;
  std::thread([&] {
    const cpu_seat seat(&s);
    if (!(pinned = pin(home))) return;
    cpu_seat::take();  // nowhere to go
    stayed = cpu_seat::claimed();
    others.back()->release();
    load.set(static_cast<int>(cpus.size()));  // that thread is gone from the count too
    cpu_seat::take();                         // at once: no wait was set while nothing was free
    moved = cpu_seat::claimed();
  }).join();
  REQUIRE(pinned);
  CHECK(stayed == home);
  CHECK(moved == cpus.back());
  CHECK(s.moves() == 1);
}
