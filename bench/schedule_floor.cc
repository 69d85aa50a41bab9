// schedule_floor TRACE [ROUNDS] [--realtime]: the floor under a faithful replay's lateness for
// this trace's schedule on this machine. It replays the schedule alone: one thread per recorded
// thread, made 50 ms before the thread's first event as the replayer makes its lanes, asking
// for what a replay thread asks for (100 us scheduler slices and a CPU of its own, cpu_spread.h;
// SCHED_FIFO with --realtime),
// waiting for each event's time as a lane does (wait_until, replayer/schedule.h) and issuing
// nothing; lateness counts the ops a replay issues. How late these threads get to their ops is what
// any replayer of this schedule pays here: a replay's lateness above it is its queues, its
// dispatcher and its ops.
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "cpu_spread.h"
#include "ops.h"
#include "schedule.h"
#include "trace_error.h"
#include "trace_reader.h"

using namespace fsrr;

namespace {

struct recorded_thread {
  uint64_t first_ts = 0;  // its first event of any kind: when the replayer starts it
  // When each of its events is due (trace ns), and whether a replay issues it: a lane waits
  // for every event's time (an exit, a clone, an mmap too), and is late only for the issued.
  std::vector<std::pair<uint64_t, bool>> events;
  std::vector<uint64_t> late;  // how late the round's thread got to each issued op
};

bool issued(op k) {
  const op_class c = info(k).cls;
  return c != op_class::process && c != op_class::unreplayable;
}

uint64_t at(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()))];
}

void round(std::map<thread_id, recorded_thread>& threads, uint64_t trace_start, bool realtime) {
  constexpr uint64_t lead = 50'000'000;  // as the replayer's timed_lead_ns
  std::vector<recorded_thread*> order;
  for (auto& [id, t] : threads) {
    t.late.clear();
    if (!t.events.empty()) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const recorded_thread* a, const recorded_thread* b) {
    return a->first_ts < b->first_ts;
  });
  const std::atomic<bool> stop{false};
  const uint64_t start = monotonic_ns() + lead;  // the trace's time 0 then
  const auto due = [&](uint64_t ts) { return start + (ts - trace_start); };
  std::vector<std::thread> running;
  cpu_spread spread(!realtime);  // ordinary threads keep to CPUs of their own, as lanes do
  for (recorded_thread* t : order) {
    const uint64_t make_at = due(t->first_ts) > lead ? due(t->first_ts) - lead : 0;
    wait_until(make_at, 0, stop);
    // Made with the short slice and keeping it, as a lane; the maker keeps its own.
    const short_slice made_with(!realtime);
    running.emplace_back([t, &due, &stop, &spread, realtime] {
      ::prctl(PR_SET_TIMERSLACK, 1UL);
      const realtime_policy rt(realtime, realtime_issuer);
      const short_slice slice(!rt.active());
      const cpu_seat seat(rt.active() ? nullptr : &spread);
      t->late.reserve(t->events.size());
      for (const auto& [ts, issues] : t->events) {
        const uint64_t d = due(ts);
        const uint64_t now =
            wait_until(d, 100'000, stop, rt.active() ? realtime_short_spin_ns : UINT64_MAX, true);
        if (issues) t->late.push_back(now > d ? now - d : 0);
      }
    });
  }
  for (std::thread& r : running) r.join();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: schedule_floor TRACE [ROUNDS] [--realtime]\n");
    return 2;
  }
  int rounds = 3;
  bool realtime = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--realtime") == 0)
      realtime = true;
    else
      rounds = std::max(1, std::atoi(argv[i]));
  }
  if (realtime && !realtime_allowed()) {
    fmt::print(stderr, "schedule_floor: --realtime: SCHED_FIFO is not allowed here\n");
    return 1;
  }
  trace_reader r = or_throw(trace_reader::open(argv[1]));
  std::map<thread_id, recorded_thread> threads;
  uint64_t trace_start = UINT64_MAX, ops = 0;
  auto events = r.events();
  event e;
  while (events.next(e)) {
    trace_start = std::min(trace_start, e.ts);
    auto [it, added] = threads.try_emplace(e.thread);
    if (added) it->second.first_ts = e.ts;
    it->second.events.emplace_back(e.ts, issued(e.kind));
    ops += issued(e.kind);
  }
  if (ops == 0) {
    fmt::print(stderr, "schedule_floor: {} has no op a replay would issue\n", argv[1]);
    return 1;
  }
  fmt::print("{}: {} ops on {} threads, {}\n", argv[1], ops, threads.size(),
             realtime ? "SCHED_FIFO threads" : "100 us slices");
  for (int k = 0; k < rounds; ++k) {
    round(threads, trace_start, realtime);
    std::vector<uint64_t> all;
    for (const auto& [id, t] : threads) all.insert(all.end(), t.late.begin(), t.late.end());
    std::sort(all.begin(), all.end());
    fmt::print("round {}: lateness p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us\n", k + 1,
               at(all, 0.5) / 1e3, at(all, 0.99) / 1e3, all.back() / 1e3);
  }
  return 0;
}
