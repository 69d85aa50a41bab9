// A trace file and an empty target in a fresh directory; replays the trace the way
// `fsrr replay` does (prepare the initial tree, then the events) and inspects the target.
#pragma once

#include <sys/stat.h>

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
  return false;
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

  replay_stats replay(const engine_options& o = afap(), data_spec data = {}) {
    trace_reader r = or_throw(trace_reader::open(trace));
    target_root t = or_throw(target_root::open(target));
    data_source d(data);
    prepare_options p;
    or_throw(prepare_tree(r, t, d, p));
    return replay_events(r, t, d, o);
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
