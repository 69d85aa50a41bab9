// A trace file and an empty target in a fresh directory; replays the trace the way
// `fsrr replay` does (prepare the initial tree, then the events) and inspects the target.
#pragma once

#include <optional>

#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "data_source.h"
#include "engine.h"
#include "prepare.h"
#include "target.h"
#include "temp_dir.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::test {

// Whether the tests of --realtime can run: SCHED_FIFO allowed (root, or CAP_SYS_NICE, and
// real-time time in the cgroup). Under CI=true they must: a refusal fails the test.
inline bool realtime_testable() {
  const auto allowed = realtime_allowed();
  if (allowed) return true;
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true")
    throw std::runtime_error(allowed.error().message + ", and CI=true forbids skipping");
  std::fprintf(stderr, "skipped: %s\n", allowed.error().message.c_str());
  return false;
}

// The calling thread's scheduler slice as the kernel reports it (ns): 0 before Linux 6.12,
// which has no slice of an ordinary thread to set.
inline uint64_t thread_slice_ns() {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
  } a{};
  if (::syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0) return 0;
  return a.policy == SCHED_OTHER ? a.runtime : 0;
}

inline engine_options afap() {
  engine_options o;
  o.timing.mode = timing_mode::afap;
  return o;
}

struct replay_fixture {
  temp_dir dir{"/dev/shm"};
  std::string trace = dir / "workload.trace";
  std::string target = dir / "target";

  explicit replay_fixture(const std::string& target_dir = "") {
    if (!target_dir.empty()) target = target_dir;
    ::mkdir(target.c_str(), 0755);
  }

  // Through the loop given, or the one the engine picks.
  replay_stats replay(const engine_options& o = afap(), data_spec data = {},
                      std::optional<replay_loop> loop = std::nullopt) {
    trace_reader r = or_throw(trace_reader::open(trace));
    target_root t = or_throw(target_root::open(target));
    data_source d(data);
    prepare_options p;
    or_throw(prepare_tree(r, t, d, p));
    return loop ? replay_events(r, t, d, o, *loop) : replay_events(r, t, d, o);
  }

  // st_size of TARGET/rel, -1 if it does not exist.
  long long size(const std::string& rel) const {
    struct stat st;
    return ::lstat((target + "/" + rel).c_str(), &st) == 0 ? st.st_size : -1;
  }
  unsigned mode(const std::string& rel) const {
    struct stat st;
    return ::lstat((target + "/" + rel).c_str(), &st) == 0 ? st.st_mode : 0;
  }
  bool exists(const std::string& rel) const { return size(rel) >= 0; }
};

inline uint64_t count(const replay_stats& s, op k) {
  return s.ops[static_cast<size_t>(k)].count;
}

}  // namespace fsrr::test
