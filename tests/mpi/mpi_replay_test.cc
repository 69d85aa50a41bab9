// `mpirun -n 4 fsrr replay --mpi` of real recordings (fsrr record, eBPF), over one shared
// target on tmpfs and on a loop-mounted ext4, as a cluster runs it over a shared mount.
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "loop_fs.h"
#include "temp_dir.h"

extern char** environ;

namespace {

using fsrr::test::run;
using fsrr::test::slurp;
using json = nlohmann::json;

// Sanitized builds (scripts/test-sanitized.sh): the ranks' leak check is off. Open MPI keeps
// allocations until its process ends and unloads the components that made them at
// MPI_Finalize, so no suppression can name them; ASan's other checks stay on, and fsrr's side
// of the shared replay is leak-checked without MPI (shared_engine_test.cc).
const std::string mpirun =
    "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" mpirun --allow-run-as-root --oversubscribe";

// Root, kernel BTF and an fsrr built with MPI; without them a test returns early, except
// under CI=true, where that is a failure.
bool can_run_mpi() {
  if (!fsrr::test::can_record()) return false;
  if (FSRR_MPI_BUILT && run("command -v mpirun >/dev/null") == 0) return true;
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true")
    FAIL("fsrr replay --mpi needs an MPI build and mpirun, and CI=true forbids skipping");
  WARN("skipped: fsrr was built without MPI, or mpirun is missing");
  return false;
}

// Records `script` (sh, run in `work`) into work/t.trace.
std::string record(const fsrr::test::temp_dir& work, const std::string& script) {
  const std::string trace = work / "t.trace";
  std::ofstream(work / "workload.sh") << script;
  const int status = run(fmt::format("cd {} && {} record -o {} -- sh workload.sh >{} 2>&1",
                                     work.path(), FSRR_BIN, trace, work / "record.log"));
  INFO(slurp(work / "record.log"));
  REQUIRE(status == 0);
  return trace;
}

struct replayed {
  int status = -1;
  json report;
  std::string out, err;
};

replayed replay(const fsrr::test::temp_dir& work, const std::string& trace,
                const std::string& target, const std::string& name, int ranks,
                const std::string& timing = "afap") {
  const std::string report = work / (name + ".json");
  const std::string cmd =
      ranks ? fmt::format("{} -n {} {} replay --mpi {} {} --timing {} --report {}", mpirun, ranks,
                          FSRR_BIN, trace, target, timing, report)
            : fmt::format("{} replay {} {} --timing {} --no-progress --report {}", FSRR_BIN, trace,
                          target, timing, report);
  replayed r;
  r.status = run(fmt::format("{} >{} 2>{}", cmd, work / (name + ".out"), work / (name + ".err")));
  r.out = slurp(work / (name + ".out"));
  r.err = slurp(work / (name + ".err"));
  std::ifstream in(report);
  if (in) r.report = json::parse(in, nullptr, false);
  return r;
}

int verify(const fsrr::test::temp_dir& work, const std::string& trace, const std::string& target) {
  return run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, trace, target, work / "verify.log"));
}

std::vector<std::string> fsrr_lines(const std::string& err) {
  std::vector<std::string> v;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("fsrr: ", 0) == 0) v.push_back(line);
  return v;
}

// Four writer processes append to one log and write files of their own (dd, exec'd), then one
// process creates a file that another renames.
const char* writers = R"(mkdir -p data
for i in 1 2 3 4; do
  ( for j in $(seq 1 25); do
      echo "writer $i line $j" >> data/log
      dd if=/dev/zero of=data/w$i.$j bs=4096 count=2 status=none
    done ) &
done
wait
sh -c 'echo made > data/made'
mv data/made data/moved
echo end >> data/log
)";

// The same replay on one process and on four ranks: the same ops, counts and bytes.
void check_same_totals(const json& single, const json& mpi) {
  CHECK(mpi["events"] == single["events"]);
  CHECK(mpi["bytes_read"] == single["bytes_read"]);
  CHECK(mpi["bytes_written"] == single["bytes_written"]);
  CHECK(mpi["files"] == single["files"]);
  CHECK(mpi["threads"] == single["threads"]);
  for (const auto& [op, s] : single["ops"].items()) {
    INFO(op);
    CHECK(mpi["ops"][op]["count"] == s["count"]);
    CHECK(mpi["ops"][op]["errors"] == s["errors"]);
  }
  CHECK(mpi["ops"].size() == single["ops"].size());
}

void check_four_ranks(const replayed& r) {
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.report.is_object());
  CHECK(r.report["mismatches"] == 0);
  REQUIRE(r.report["ranks"].size() == 4);
  for (int k = 0; k < 4; ++k) {
    const json& row = r.report["ranks"][k];
    CHECK(row["rank"] == k);
    CHECK(row["events"].get<uint64_t>() > 0);
    CHECK(row["idle"] == false);
    CHECK(row["backend"] == "lanes");  // a trace of several threads, each rank's share settled
    CHECK(row.contains("host"));
    CHECK(row.contains("wall_ns"));
    CHECK(row.contains("clock_offset_ns"));
    CHECK(row.contains("dependency_waits"));
  }
  CHECK(r.report["start_skew_ns"].is_number());
  CHECK(r.report["backend"] == "mpi");
  CHECK(r.report.contains("dependency_waits"));
  CHECK(fsrr_lines(r.err).empty());
}

// The ranks of a running mpirun: its children, by OMPI_COMM_WORLD_RANK.
std::map<int, pid_t> ranks_of(pid_t mpirun_pid) {
  std::map<int, pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string stat = slurp(fmt::format("/proc/{}/stat", pid));
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != mpirun_pid) continue;
    std::string env = slurp(fmt::format("/proc/{}/environ", pid));
    const std::string key = std::string("OMPI_COMM_WORLD_RANK=");
    for (size_t at = 0; at < env.size(); at = env.find('\0', at) + 1) {
      if (env.compare(at, key.size(), key) == 0) {
        out[std::atoi(env.c_str() + at + key.size())] = pid;
        break;
      }
      if (env.find('\0', at) == std::string::npos) break;
    }
  }
  ::closedir(d);
  return out;
}

// Running (a zombie left for its new parent to reap is gone as far as work goes).
bool alive(pid_t pid) {
  const std::string stat = slurp(fmt::format("/proc/{}/stat", pid));
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// An mpirun this test started, ended with everything it started however the test ends.
struct mpirun_job {
  pid_t pid = -1;
  std::map<int, pid_t> ranks;
  ~mpirun_job() {
    for (const auto& [r, p] : ranks)
      if (alive(p)) ::kill(p, SIGKILL);
    if (pid > 0 && alive(pid)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace

// (No ": " in these names: Catch2 2.13 indents a wrapped name's further lines past it, and one
// far along a long name overruns its header printer when a test fails or is skipped.)
TEST_CASE(
    "four ranks replay writers sharing a log and a file one creates and another renames with "
    "0 mismatches, verified, the totals of one process, on tmpfs and ext4",
    "[mpi]") {
  if (!can_run_mpi()) return;
  fsrr::test::temp_dir work("/dev/shm");
  const std::string trace = record(work, writers);
  fsrr::test::temp_dir single_target("/dev/shm");
  const replayed single = replay(work, trace, single_target.path(), "single", 0);
  INFO(single.out << single.err);
  REQUIRE(single.status == 0);
  REQUIRE(single.report["mismatches"] == 0);
  {
    fsrr::test::temp_dir target("/dev/shm");
    const replayed r = replay(work, trace, target.path(), "tmpfs", 4);
    check_four_ranks(r);
    check_same_totals(single.report, r.report);
    CHECK(verify(work, trace, target.path()) == 0);
    INFO(slurp(work / "verify.log"));
    // The summary is printed once, by rank 0.
    size_t n = 0;
    for (size_t at = r.out.find("mismatches:"); at != std::string::npos;
         at = r.out.find("mismatches:", at + 1))
      ++n;
    CHECK(n == 1);
  }
  if (!fsrr::test::require_root("a loop-mounted ext4")) return;
  fsrr::test::loop_fs ext4("ext4", 256);
  const replayed r = replay(work, trace, ext4.path(), "ext4", 4);
  check_four_ranks(r);
  check_same_totals(single.report, r.report);
  CHECK(verify(work, trace, ext4.path()) == 0);
  INFO(slurp(work / "verify.log"));
}

TEST_CASE(
    "four ranks replay a merged trace of two recordings made at once, each rank one host's, "
    "with 0 mismatches, verified, the totals of one process",
    "[mpi]") {
  if (!can_run_mpi()) return;
  fsrr::test::temp_dir work("/dev/shm");
  // host b's stats that found nothing must run before a's create, on another rank
  const fsrr::test::two_hosts h = fsrr::test::record_two_hosts(work.path(), FSRR_BIN);
  const std::string shared = h.shared, ab = h.merged;
  fsrr::test::temp_dir single_target("/dev/shm");
  const replayed single = replay(work, ab, single_target.path(), "single", 0);
  INFO(single.out << single.err);
  REQUIRE(single.status == 0);
  REQUIRE(single.report["mismatches"] == 0);

  fsrr::test::temp_dir target("/dev/shm");
  const replayed r = replay(work, ab, target.path(), "merged", 4);
  check_four_ranks(r);
  check_same_totals(single.report, r.report);
  std::set<int> hosts;
  for (const json& row : r.report["ranks"]) {
    INFO(row.dump());
    REQUIRE(row["recorded_hosts"].size() == 1);  // a host's processes, never two hosts'
    hosts.insert(row["recorded_hosts"][0].get<int>());
  }
  CHECK(hosts == std::set<int>{0, 1});
  CHECK(verify(work, ab, target.path()) == 0);
  INFO(slurp(work / "verify.log"));
  struct stat renamed {};
  CHECK(::stat((target.path() + shared + "/renamed-by-b").c_str(), &renamed) == 0);
  CHECK(renamed.st_size == 6);

  // merged with --shared: each host's own paths in a root of its own, a rank each
  const std::string split = work / "split.trace";
  REQUIRE(run(fmt::format("{} merge {} {} --shared {} -o {} >{} 2>&1", FSRR_BIN, h.a, h.b,
                          shared, split, work / "split.log")) == 0);
  fsrr::test::temp_dir split_target("/dev/shm");
  const replayed two = replay(work, split, split_target.path(), "split", 2);
  INFO(two.out << two.err);
  REQUIRE(two.status == 0);
  CHECK(two.report["mismatches"] == 0);
  CHECK(verify(work, split, split_target.path()) == 0);
  INFO(slurp(work / "verify.log"));
  CHECK(::stat((split_target.path() + "/root1" + shared + "/renamed-by-b").c_str(), &renamed) == 0);
  CHECK(::stat((split_target.path() + "/hosts").c_str(), &renamed) == 0);
}

TEST_CASE("with more ranks than processes the idle ranks say so and the replay is whole", "[mpi]") {
  if (!can_run_mpi()) return;
  fsrr::test::temp_dir work("/dev/shm");
  REQUIRE(run("mkdir " + (work / "data")) == 0);
  // Two processes: the shell (echo is built in) and dd, which opens its files itself (a
  // redirection is opened by dash before it forks: the child would share it).
  const std::string trace = record(work, "echo a > data/x\ndd if=data/x of=data/y status=none\n");
  fsrr::test::temp_dir target("/dev/shm");
  const replayed r = replay(work, trace, target.path(), "idle", 4, "faithful");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.report["mismatches"] == 0);
  REQUIRE(r.report["ranks"].size() == 4);
  CHECK(r.report["ranks"][0]["events"].get<uint64_t>() > 0);
  CHECK(r.report["ranks"][1]["events"].get<uint64_t>() > 0);
  for (int k : {2, 3}) {
    CHECK(r.report["ranks"][k]["idle"] == true);
    CHECK(r.report["ranks"][k]["events"] == 0);
    CHECK(r.err.find(fmt::format("rank {}: idle", k)) != std::string::npos);
  }
  CHECK(r.report["ranks"][0].contains("lateness_ns"));
  CHECK(r.report["start_skew_ns"].is_number());
  CHECK(verify(work, trace, target.path()) == 0);
}

TEST_CASE("a rank that fails stops every rank, all exit non-zero, and one line names it", "[mpi]") {
  if (!can_run_mpi()) return;
  fsrr::test::temp_dir work("/dev/shm");
  const std::string trace = record(work, writers);
  if (!fsrr::test::require_root("a small tmpfs")) return;
  // Room for the initial tree (3.6 MiB) and not for what the writers add: the rank whose write
  // finds the file system full stops, and with it the others.
  fsrr::test::loop_fs full("tmpfs", 4);
  const replayed r = replay(work, trace, full.path(), "full", 4);
  INFO(r.out << r.err);
  CHECK(r.status != 0);
  const auto lines = fsrr_lines(r.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("fsrr: rank ", 0) == 0);
  CHECK(lines[0].find(": ENOSPC on the target: write ") != std::string::npos);
  REQUIRE(r.report.is_object());  // rank 0 still wrote what ran
  CHECK(r.report["stopped"].get<std::string>().find("ENOSPC") != std::string::npos);
}

namespace {

// Kills rank 2 of four in the middle of a faithful replay; `env` goes before mpirun. The job's
// stderr, once mpirun has ended.
void kill_rank_two(const std::string& env) {
  fsrr::test::temp_dir work("/dev/shm");
  // ~4 s of appends by four processes, replayed faithfully: long enough to kill one rank
  // in the middle.
  const std::string trace = record(work, R"(mkdir -p data
for i in 1 2 3 4; do
  ( for j in $(seq 1 20); do echo "writer $i $j" >> data/log; sleep 0.2; done ) &
done
wait
)");
  fsrr::test::temp_dir target("/dev/shm");
  const std::string cmd =
      fmt::format("exec env {} {} -n 4 {} replay --mpi {} {} --timing faithful >{} 2>{}", env,
                  mpirun, FSRR_BIN, trace, target.path(), work / "kill.out", work / "kill.err");
  const char* argv[] = {"sh", "-c", cmd.c_str(), nullptr};
  mpirun_job job;
  REQUIRE(::posix_spawn(&job.pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) ==
          0);
  const auto began = std::chrono::steady_clock::now();
  while (job.ranks.size() < 4 &&
         std::chrono::steady_clock::now() - began < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job.ranks = ranks_of(job.pid);
  }
  REQUIRE(job.ranks.size() == 4);
  // into the replay: the replayed log has its first lines (a fixed wait was not enough under
  // the sanitizers, whose prepare is slower)
  const std::string log = target.path() + work.path() + "/data/log";
  struct stat st {};
  while ((::stat(log.c_str(), &st) != 0 || st.st_size == 0) &&
         std::chrono::steady_clock::now() - began < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(st.st_size > 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(alive(job.ranks[2]));
  REQUIRE(::kill(job.ranks[2], SIGKILL) == 0);
  int status = 0;
  pid_t ended = 0;
  const auto killed = std::chrono::steady_clock::now();
  while ((ended = ::waitpid(job.pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - killed < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(ended == job.pid);
  job.pid = -1;
  const std::string err = slurp(work / "kill.err");
  INFO(err << slurp(work / "kill.out"));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  const auto lines = fsrr_lines(err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("fsrr: rank 2: ", 0) == 0);
  // each rank a node of its own: only rank 0's connection to rank 2 could name it
  CHECK((err.find("rank 0: FSRR_TEST_RANK_NODES=own: no rank watches a peer of its node\n") !=
         std::string::npos) == !env.empty());
  CHECK(lines[0].find("during the replay") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (const auto& [r, p] : job.ranks) {
    INFO("rank " << r << " pid " << p);
    CHECK_FALSE(alive(p));
  }
}

}  // namespace

TEST_CASE("a rank killed mid-replay ends the job with every rank gone and one line naming it",
          "[mpi]") {
  if (!can_run_mpi()) return;
  kill_rank_two("");
}

// Each rank its own node: no peer watches rank 2 there, rank 0 alone can name it (its
// connection to rank 0 ends without a goodbye).
TEST_CASE("a rank alone on its node killed mid-replay is named by rank 0, and every rank is gone",
          "[mpi]") {
  if (!can_run_mpi()) return;
  kill_rank_two("FSRR_TEST_RANK_NODES=own");
}
