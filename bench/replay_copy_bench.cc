// bench_replay_copy: the pieces of bench/replay_copy.sh that need the library.
//   trace SRC DST OUT   write the trace `cp -a SRC DST` by coreutils 9 would record, without
//                       `fsrr record`: the tree is walked and each entry gets cp's exact
//                       syscall sequence (tests/common/cp_model.h, which the tests use too)
//   native CMD ARGS...  run CMD (e.g. cp -a SRC DST); print "wall_s user_s sys_s"
//   replay TRACE TARGET prepare TRACE's tree in TARGET, then replay its events --timing afap
//                       as `fsrr replay` does; print "wall_s user_s sys_s events mismatches
//                       cpu_s": wall_s is the report's wall_ns (the events alone, not the
//                       prepare step); user_s, sys_s (the process) and cpu_s (the replaying,
//                       calling thread) also count the engine's setup before its clock starts
// FSRR_BENCH_INLINE_DECODE=1: decode on the replaying thread (engine_options::decode_ahead).
// FSRR_BENCH_QUEUE_DEPTH=N: engine_options::queue_depth.
// FSRR_BENCH_COLD=1: the replay starts on the freshly prepared tree, not read once first as
// the native side's source tree has been.
// FSRR_BENCH_SKIP_PREPARE=1: TARGET already holds the initial tree (an earlier replay's, with
// the copy removed), for quick repeated measurements.
// To profile the replay alone: perf record --control=fifo:CTL,ACK -D -1 ... with
// FSRR_PERF_CTL=CTL and FSRR_PERF_ACK=ACK in the environment.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cp_model.h"
#include "engine.h"
#include "prepare.h"
#include "read_tree.h"
#include "trace_error.h"

using namespace fsrr;

namespace {

int64_t ns_of(const timespec& t) {
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

// The trace holds canonical absolute paths, as the kernel resolved them.
std::string canonical(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : p.substr(0, slash ? slash : 1);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) throw std::runtime_error(dir + ": no such directory");
  std::string r = real;
  ::free(real);
  const std::string last = slash == std::string::npos ? p : p.substr(slash + 1);
  return last.empty() ? r : (r == "/" ? "" : r) + "/" + last;
}

int write_trace(const std::string& src, const std::string& dst, const std::string& out) {
  model::cp_options o;
  o.writer = "bench_replay_copy";
  model::write_cp_a(out, model::disk_tree{}, canonical(src), canonical(dst), o);
  return 0;
}

int native(char** argv) {
  timespec a, b;
  ::clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t pid;
  if (::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) return 1;
  int status;
  rusage ru;
  ::wait4(pid, &status, 0, &ru);
  ::clock_gettime(CLOCK_MONOTONIC, &b);
  fmt::print("{:.6f} {:.6f} {:.6f}\n", (ns_of(b) - ns_of(a)) / 1e9, seconds(ru.ru_utime),
             seconds(ru.ru_stime));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// Tells a `perf record --control=fifo:CTL,ACK` session to start or stop sampling.
void perf_control(const char* command) {
  const char* ctl = std::getenv("FSRR_PERF_CTL");
  const char* ack = std::getenv("FSRR_PERF_ACK");
  if (!ctl || !ack) return;
  const int c = ::open(ctl, O_WRONLY | O_CLOEXEC), a = ::open(ack, O_RDONLY | O_CLOEXEC);
  if (c >= 0 && a >= 0 && ::write(c, command, std::strlen(command)) > 0) {
    char buf[8];
    [[maybe_unused]] const ssize_t n = ::read(a, buf, sizeof buf);
  }
  if (c >= 0) ::close(c);
  if (a >= 0) ::close(a);
}

int replay(const std::string& trace_path, const std::string& target_dir) {
  trace_reader trace = or_throw(trace_reader::open(trace_path));
  target_root target = or_throw(target_root::open(target_dir));
  const data_source data(data_spec{});
  prepare_options popt;
  popt.privilege.owners = ::geteuid() == 0;  // as cp -a, which it is measured against
  const bool reuse = std::getenv("FSRR_BENCH_SKIP_PREPARE");
  const prepare_result p =
      reuse ? prepare_result{} : or_throw(prepare_tree(trace, target, data, popt));
  if (p.errors) fmt::print(stderr, "prepare: {} errors\n", p.errors);
  // The native rounds copy a source tree that the recording and the rounds before have read;
  // a freshly prepared tree's pages would first be moved to the active list by the replay.
  if (!reuse && !std::getenv("FSRR_BENCH_COLD")) bench::read_tree(target_dir);
  engine_options eo;
  eo.timing.mode = timing_mode::afap;
  eo.decode_ahead = !std::getenv("FSRR_BENCH_INLINE_DECODE");
  if (const char* depth = std::getenv("FSRR_BENCH_QUEUE_DEPTH")) eo.queue_depth = std::stoul(depth);
  rusage r0, r1;
  timespec c0, c1;
  perf_control("enable");
  ::getrusage(RUSAGE_SELF, &r0);
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  const replay_stats s = replay_events(trace, target, data, eo);
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  ::getrusage(RUSAGE_SELF, &r1);
  perf_control("disable");
  fmt::print("{:.6f} {:.6f} {:.6f} {} {} {:.6f}\n", s.wall_ns / 1e9,
             seconds(r1.ru_utime) - seconds(r0.ru_utime),
             seconds(r1.ru_stime) - seconds(r0.ru_stime), s.events, s.mismatches,
             (ns_of(c1) - ns_of(c0)) / 1e9);
  for (const auto& m : s.first_mismatches)
    fmt::print(stderr, "mismatch: {} {}: recorded {}, replayed {}\n", name(m.kind), m.path,
               m.recorded, m.replayed);
  if (!s.stopped.empty()) fmt::print(stderr, "stopped: {}\n", s.stopped);
  return s.stopped.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "trace" && argc == 5) return write_trace(argv[2], argv[3], argv[4]);
    if (cmd == "native" && argc > 2) return native(argv + 2);
    if (cmd == "replay" && argc == 4) return replay(argv[2], argv[3]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_replay_copy: {}\n", e.what());
    return 1;
  }
  fmt::print(
      stderr,
      "usage: bench_replay_copy trace SRC DST OUT | native CMD ARGS... | replay TRACE TARGET\n");
  return 2;
}
