// Recording production as it runs: a busy machine, a recorder held up, a systemd unit's or
// container's cgroup, part of the tree, a window of a long run. All through the fsrr binary.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

nlohmann::json info_of(const std::string& trace) {
  const std::string out = trace + ".info";
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, trace, out)) == 0);
  return nlohmann::json::parse(slurp(out));
}

// Every event, as dump --json gives it.
std::vector<nlohmann::json> events_of(const std::string& trace) {
  const std::string out = trace + ".jsonl";
  REQUIRE(run(fmt::format("{} dump {} --json >{}", FSRR_BIN, trace, out)) == 0);
  std::vector<nlohmann::json> v;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) v.push_back(nlohmann::json::parse(line));
  return v;
}

size_t named_below(const std::vector<nlohmann::json>& events, const std::string& dir) {
  size_t n = 0;
  for (const auto& e : events)
    for (const char* k : {"path", "path2"})
      if (e.value(k, "").rfind(dir + "/", 0) == 0) ++n;
  return n;
}

// `count` files of 1 KiB in `dir`.
void small_files(const std::string& dir, int count) {
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  for (int i = 0; i < count; ++i) write_file(fmt::format("{}/f{:05}", dir, i), 1024);
}

// A process started by the test: `sh -c command` in a session of its own, killed with all it
// started when the object goes, whatever happened in between.
class background {
 public:
  explicit background(const std::string& command) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test killed outright takes it along
      ::execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
      ::_exit(127);
    }
  }
  ~background() { stop(); }
  pid_t pid() const { return pid_; }
  int wait() {
    int status = 0;
    if (pid_ > 0) ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    wait();
  }

 private:
  pid_t pid_ = -1;
};

// The stopped-or-not state of a process, from /proc/PID/stat.
char state_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string s;
  std::getline(in, s);
  const size_t close = s.rfind(')');
  return close == std::string::npos || close + 2 >= s.size() ? '?' : s[close + 2];
}

uint64_t number_after(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? std::stoull(m[1]) : 0;
}

}  // namespace

TEST_CASE("a recording of rsync on a machine with both cores busy and the disk syncing loses "
          "nothing",
          "[production][load]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  // the seed-000 tree at a fifth of its size: 22,220 files
  REQUIRE(run(fmt::format("{}/bench/make_seed_tree.sh {} 0.2", SOURCE_DIR, tmp / "src")) == 0);
  temp_dir disk("/var/tmp");
  background cpu1("gzip -1 </dev/urandom >/dev/null"), cpu2("gzip -1 </dev/urandom >/dev/null");
  background io(fmt::format(
      "while :; do dd if=/dev/zero of={} bs=1M count=32 conv=fsync status=none; done",
      disk / "sync.img"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  REQUIRE(run(fmt::format("{} record -o {} -- rsync -aAHX {}/ {} 2>{}", FSRR_BIN, tmp / "t.trace",
                          tmp / "src", tmp / "dst", tmp / "log")) == 0);
  cpu1.stop();
  cpu2.stop();
  io.stop();
  const std::string log = slurp(tmp / "log");
  INFO(log);
  const auto info = info_of(tmp / "t.trace");
  CHECK(info["lost_events"] == 0);
  CHECK(info["complete"] == true);
  // rsync writes each file to a temporary name and renames it: with renameat here, with rename
  // (and openat2) in a freshly debootstrapped root, the same rsync 3.5.0 and glibc
  CHECK(info["ops"].value("renameat", 0) + info["ops"].value("rename", 0) >= 22220);
  WARN("under load: " << info["events"] << " events, paused " << info["pauses"] << " times, "
                      << info["paused_ns"].get<uint64_t>() / 1e6 << " ms");
}

// fsrr itself is stopped (SIGSTOP, from outside) for a second while its workload copies:
// the ring buffer fills up with nobody to empty it.
TEST_CASE("a recorder held up stops its workload until it catches up, or with --lossy loses "
          "events and says so",
          "[production][pause]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  small_files(tmp / "src", 3000);
  for (const bool lossy : {false, true}) {
    DYNAMIC_SECTION((lossy ? "--lossy" : "default")) {
      const std::string trace = tmp / (lossy ? "lossy.trace" : "paused.trace");
      const std::string log = trace + ".log";
      background rec(fmt::format(
          "exec {} record {} --ring-buffer 256K -o {} -- sh -c 'kill -STOP $PPID; cp -a {} {}' "
          "2>{}",
          FSRR_BIN, lossy ? "--lossy" : "", trace, tmp / "src", tmp / (lossy ? "l" : "d"), log));
      for (int i = 0; i < 500 && state_of(rec.pid()) != 'T'; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      REQUIRE(state_of(rec.pid()) == 'T');
      std::this_thread::sleep_for(std::chrono::seconds(1));
      ::kill(rec.pid(), SIGCONT);
      CHECK(rec.wait() == 0);
      const std::string out = slurp(log);
      INFO(out);
      const auto info = info_of(trace);
      if (lossy) {
        CHECK(info["lost_events"] > 0);
        CHECK(info["complete"] == false);
        CHECK(info["pauses"] == 0);
        CHECK(out.find("events were lost; the trace is incomplete") != std::string::npos);
      } else {
        CHECK(info["lost_events"] == 0);
        CHECK(info["complete"] == true);
        CHECK(info["pauses"] > 0);
        CHECK(info["paused_ns"] > 300'000'000);  // it waited for fsrr most of that second
        CHECK(number_after(out, R"(workload was stopped (\d+) times)") == info["pauses"]);
        CHECK(info["ops"]["copy_file_range"] >= 6000);  // every file, none left out
      }
    }
  }
}

// fsrr killed outright while it has the workload stopped: its guard continues it.
TEST_CASE("a workload stopped by a recorder that is then killed with SIGKILL goes on",
          "[production][pause]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  small_files(tmp / "src", 3000);
  background rec(fmt::format(
      "exec {} record --ring-buffer 256K -o {} -- sh -c 'kill -STOP $PPID; cp -a {} {}; touch {}'",
      FSRR_BIN, tmp / "t.trace", tmp / "src", tmp / "dst", tmp / "done"));
  for (int i = 0; i < 500 && state_of(rec.pid()) != 'T'; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(state_of(rec.pid()) == 'T');
  // cp fills the ring and stops itself: fsrr is stopped and does not drain
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  struct stat st;
  REQUIRE(::stat((tmp / "done").c_str(), &st) != 0);
  ::kill(rec.pid(), SIGKILL);
  rec.wait();
  bool done = false;
  for (int i = 0; i < 500 && !done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    done = ::stat((tmp / "done").c_str(), &st) == 0;
  }
  CHECK(done);  // cp was continued and finished, and the shell after it
  CHECK(::stat((tmp / "dst/f02999").c_str(), &st) == 0);
}

TEST_CASE("record --cgroup follows the cgroup's processes, those that join later too, and no "
          "others",
          "[production][cgroup]") {
  if (!can_record()) return;
  // the cgroup2 mount
  std::string mount_point;
  {
    std::ifstream mi("/proc/self/mountinfo");
    for (std::string line; std::getline(mi, line);)
      if (line.find(" - cgroup2 ") != std::string::npos) {
        std::istringstream f(line);
        std::string skip;
        f >> skip >> skip >> skip >> skip >> mount_point;
        break;
      }
  }
  REQUIRE(!mount_point.empty());
  temp_dir tmp("/dev/shm");
  const std::string name = "fsrr-test-" + std::to_string(::getpid());
  const std::string cgroup = mount_point + "/" + name;
  REQUIRE(::mkdir(cgroup.c_str(), 0755) == 0);
  struct remove_cgroup {
    std::string path;
    ~remove_cgroup() { ::rmdir(path.c_str()); }
  } cleanup{cgroup};
  small_files(tmp / "src", 20);

  background rec(fmt::format("exec {} record -o {} --cgroup {} 2>{}", FSRR_BIN, tmp / "t.trace",
                             name, tmp / "log"));
  for (int i = 0; i < 3000 && slurp(tmp / "log").find("record: recording") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // until fsrr says it is attached
  // outside the cgroup, at the same time: not recorded
  REQUIRE(run(fmt::format("cp -a {} {}", tmp / "src", tmp / "outside")) == 0);
  // joins the cgroup, then copies: recorded; the cgroup is empty again once it ends
  REQUIRE(run(fmt::format("sh -c 'echo $$ > {}/cgroup.procs && cp -a {} {}'", cgroup, tmp / "src",
                          tmp / "inside")) == 0);
  CHECK(rec.wait() == 0);  // fsrr ended by itself: the cgroup had processes and has none left
  INFO(slurp(tmp / "log"));
  const auto events = events_of(tmp / "t.trace");
  CHECK(named_below(events, tmp / "inside") >= 20);
  CHECK(named_below(events, tmp / "outside") == 0);
  CHECK(info_of(tmp / "t.trace")["command"][0] == "--cgroup=" + name);
}

TEST_CASE("record --path keeps the events beneath it, and ops on other files are not even sent",
          "[production][path]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  small_files(tmp / "src", 200);
  // cp reads beneath src and writes beneath copy; only src is kept
  REQUIRE(run(fmt::format("cd {} && {} record -o t.trace --path src -- cp -a src copy 2>log",
                          tmp.path(), FSRR_BIN)) == 0);
  const std::string log = slurp(tmp / "log");
  INFO(log);
  const auto events = events_of(tmp / "t.trace");
  CHECK(named_below(events, tmp / "src") >= 400);  // its stat and open, per file
  CHECK(named_below(events, tmp / "copy") == 0);
  const auto info = info_of(tmp / "t.trace");
  CHECK(info["tree"]["files"] == 200);  // the sources; nothing of /usr, /etc or the copy
  CHECK(info["complete"] == true);
  const uint64_t filtered = info["filtered_events"];
  CHECK(filtered >= 200 * 5);  // each copy's open, stat, fsetxattr, utimensat, close at least
  CHECK(number_after(log, R"(record: (\d+) events outside --path)") == filtered);
  // the copies' fstat, fd-only, are dropped in the kernel; so are the loader's reads and mmaps
  CHECK(number_after(log, R"(\((\d+) in the kernel\))") >= 200);
  // what is kept replays: the sources are there
  temp_dir target("/dev/shm");
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress >/dev/null 2>&1", FSRR_BIN,
                          tmp / "t.trace", target.path())) == 0);
  struct stat st;
  CHECK(::stat((target.path() + tmp.path() + "/src/f00199").c_str(), &st) == 0);
}

TEST_CASE("record --duration ends the recording on time, the command goes on and its status "
          "comes through",
          "[production][duration]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  const auto start = std::chrono::steady_clock::now();
  const int status =
      run(fmt::format("cd {} && {} record -o t.trace --duration 2.5 -- sh -c 'for i in $(seq 1 90); "
                      "do echo $i > f$i; sleep 0.05; done; exit 3' 2>log",
                      tmp.path(), FSRR_BIN));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(slurp(tmp / "log"));
  CHECK(status == 3);
  CHECK(took > 4.4);  // fsrr waited for the command, which runs about 4.5 s
  struct stat st;
  CHECK(::stat((tmp / "f90").c_str(), &st) == 0);
  const auto info = info_of(tmp / "t.trace");
  CHECK(info["complete"] == true);
  // --duration counts from trace time 0, before the programs are loaded (on a busy machine
  // that took 1.4 s once): 2.5 s leaves the command time to make its first files
  CHECK(info["duration_ns"] <= 2'500'000'000);
  const auto events = events_of(tmp / "t.trace");
  CHECK(named_below(events, tmp.path()) >= 5);  // the first files
  bool has_f90 = false;
  for (const auto& e : events) has_f90 = has_f90 || e.value("path", "") == tmp / "f90";
  CHECK(!has_f90);
  CHECK(slurp(tmp / "log").find("--duration reached; the trace is complete") != std::string::npos);
}

TEST_CASE("record --max-size ends the recording near that size, with a complete trace",
          "[production][max-size]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  small_files(tmp / "src", 3000);
  REQUIRE(run(fmt::format("{} record -o {} -- cp -a {} {} 2>/dev/null", FSRR_BIN, tmp / "all.trace",
                          tmp / "src", tmp / "a")) == 0);
  REQUIRE(run(fmt::format("{} record -o {} --max-size 32K -- cp -a {} {} 2>{}", FSRR_BIN,
                          tmp / "cut.trace", tmp / "src", tmp / "b", tmp / "log")) == 0);
  INFO(slurp(tmp / "log"));
  const auto all = info_of(tmp / "all.trace"), cut = info_of(tmp / "cut.trace");
  CHECK(cut["complete"] == true);
  CHECK(cut["events"] < all["events"]);
  // the events stop near 32 KiB; the tree of the directory cp listed is completed after them
  CHECK(cut["trace_bytes"].get<uint64_t>() < 64 * 1024 + all["trace_bytes"].get<uint64_t>() / 4);
  CHECK(slurp(tmp / "log").find("--max-size reached") != std::string::npos);
  struct stat st;
  CHECK(::stat((tmp / "b/f02999").c_str(), &st) == 0);  // cp went on to the end
}

// A directory the workload lists while another program writes a file in it (a log beside a
// job; fsrr's own trace): the name was there when listed, so the replay lists it too. The
// recorder settles a listing a second later and skips what changed since; what was born
// before the listing stays.
TEST_CASE("a directory listed while another program writes in it lists the same names on "
          "replay",
          "[production][listing]") {
  if (!can_record()) return;
  temp_dir tmp("/dev/shm");
  REQUIRE(run(fmt::format("cd {} && (while :; do echo x >>noise; sleep 0.005; done) >/dev/null "
                          "2>&1 & echo $! >{}/writer.pid",
                          tmp.path(), tmp.path())) == 0);
  const std::string pid = slurp(tmp / "writer.pid");
  struct stop_writer {
    std::string pid;
    ~stop_writer() { run("kill " + pid + " 2>/dev/null"); }
  } stop{pid.substr(0, pid.find('\n'))};
  // record_and_replay checks 0 mismatches on every file system: the listing's end included
  record_and_replay(tmp.path(), "ls -a >/dev/null", 3);
}
