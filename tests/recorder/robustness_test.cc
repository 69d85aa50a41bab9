// Losses are reported, not hidden; a killed recorder leaves a readable trace; a stopped one a
// complete trace; the output is private and never overwritten by accident.
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include <algorithm>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "helpers.h"
#include "probes.h"

using namespace fsrr;

namespace {

void make_files(const std::string& dir, int n) {
  ::mkdir(dir.c_str(), 0755);
  for (int i = 0; i < n; ++i) test::write_file(dir + "/f" + std::to_string(i), 512);
}

// Runs record(o) in a child process of its own process group (so that the test can stop
// the recorder and then its workload); `act` gets the child's pid. Returns the child's
// exit status (128 + signal if killed).
template <class F>
int record_in_child(const recorder::record_options& o, F act) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int status = 111;
    try {
      const auto res = test::record(o);
      status = res.exit_status == 128 + SIGTERM && res.interrupted ? 0 : 1;
    } catch (...) {
      status = 2;
    }
    ::_exit(status);
  }
  ::setpgid(pid, pid);
  act(pid);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::kill(-pid, SIGKILL);  // the workload, if the recorder left it behind
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Until `path` holds at least `bytes` (a workload's progress, not a guess at how long its
// start takes on a loaded machine), for at most two minutes.
void wait_for_bytes(const std::string& path, off_t bytes) {
  struct stat st;
  for (int i = 0; i < 12000; ++i, sleep_ms(10))
    if (::stat(path.c_str(), &st) == 0 && st.st_size >= bytes) return;
}

// A process's resident memory, in bytes (0 once it is gone).
uint64_t rss_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  uint64_t kb = 0;
  while (in >> key)
    if (key == "VmRSS:" && in >> kb) return kb * 1024;
  return 0;
}

// The burst's (the dynamic loader's preads are larger).
size_t one_byte_preads(test::trace& t) {
  const auto all = t.all(op::pread64);
  return std::count_if(all.begin(), all.end(), [](const event* e) { return e->size == 1; });
}

}  // namespace

// The recorder falls behind for as long as the test holds its decoder: the workload's 20,000
// one-byte preads fill the smallest ring (256 KiB) and queue (64 KiB) many times over.
TEST_CASE("a recorder that falls behind stops the workload rather than lose its events",
          "[recorder][loss]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "behind.trace";
  o.command = {test::workload(), "burst", tmp.path()};
  o.ring_bytes = 4096;  // rounded up to the smallest ring, 256 KiB
  o.queue_bytes = 64 << 10;
  o.on_started = [] { ::usleep(1'000'000); };  // the decoder is busy elsewhere meanwhile

  SECTION("by default: nothing lost, the pauses counted, stored and shown") {
    const auto res = test::record(o);
    REQUIRE(res.exit_status == 0);
    CHECK(res.lost == 0);
    CHECK(res.pauses > 0);
    CHECK(res.paused_ns > 100'000'000);  // it waited for the decoder, most of that second
    test::trace t(o.output);
    CHECK(t.reader.complete());
    CHECK(t.reader.summary().pauses == res.pauses);
    CHECK(t.reader.summary().paused_ns == res.paused_ns);
    CHECK(one_byte_preads(t) == 20000);
    // The queue held records, not slabs with a few records each: its memory kept to its
    // budget (64 KiB asked; two slabs of 64 KiB, the least it takes).
    CHECK(res.peak_queued > 0);
    CHECK(res.peak_queue_memory <= 128 << 10);
  }
  SECTION("--lossy: events are lost instead, counted per CPU, stored, never complete") {
    o.lossy = true;
    const auto res = test::record(o);
    REQUIRE(res.exit_status == 0);
    CHECK(res.lost > 0);
    CHECK(res.pauses == 0);
    test::trace t(o.output);
    CHECK(t.reader.summary().lost_events == res.lost);
    CHECK(t.reader.summary().pauses == 0);
    CHECK(t.reader.has_footer());
    CHECK(!t.reader.complete());
    CHECK(one_byte_preads(t) < 20000);
  }
  SECTION("--strict makes any loss a failure") {
    o.lossy = true;
    o.strict = true;
    const auto res = test::try_record(o);
    REQUIRE(!res);
    test::trace t(o.output);  // still written, still readable
    CHECK(t.reader.summary().lost_events > 0);
    CHECK(res.error().status == 0);
    CHECK(res.error().message ==
          fmt::format("{} events lost (--strict); the trace {} is incomplete",
                      t.reader.summary().lost_events, o.output));
  }
}

// CPU-bound processes, one per CPU, at the test's priority; killed and reaped when it goes.
class cpu_hogs {
 public:
  cpu_hogs() {
    for (long i = 0, n = ::sysconf(_SC_NPROCESSORS_ONLN); i < n; ++i) {
      const pid_t p = ::fork();
      if (p == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that dies outright takes them along
        if (::getppid() == 1) ::_exit(0);
        volatile unsigned long spin = 0;
        for (;;) spin = spin + 1;
      }
      if (p > 0) pids_.push_back(p);
    }
  }
  ~cpu_hogs() {
    for (pid_t p : pids_) ::kill(p, SIGKILL);
    for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
  }
  size_t size() const { return pids_.size(); }
  cpu_hogs(const cpu_hogs&) = delete;
  cpu_hogs& operator=(const cpu_hogs&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// fsrr's decoder works as SCHED_IDLE while it keeps up (idle_decoder.h), and the thread that
// called record() has its own policy and nice value back afterwards.
TEST_CASE("the decoder runs on idle CPU time, and the caller's thread is as it was after",
          "[recorder][idle]") {
  REQUIRE_IDLE_DECODER();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "idle.trace";
  o.command = {test::workload(), "burst", tmp.path()};
  SECTION("by default") {
    // On a thread of its own, whose nice value the test sets; checked here, on Catch's.
    int nice_set = -1, policy_after = -1, nice_after = -1;
    recorder::record_result res;
    std::string failed;
    std::thread([&] {
      nice_set = ::setpriority(PRIO_PROCESS, 0, 2);
      try {
        res = test::record(o);
      } catch (const std::exception& e) {
        failed = e.what();
      }
      policy_after = ::sched_getscheduler(0);
      nice_after = ::getpriority(PRIO_PROCESS, 0);
    }).join();
    REQUIRE(failed.empty());
    CHECK(nice_set == 0);
    CHECK(res.exit_status == 0);
    CHECK(res.decoder_idled >= 1);
    CHECK(policy_after == SCHED_OTHER);
    CHECK(nice_after == 2);
    test::trace t(o.output);
    CHECK(one_byte_preads(t) == 20000);
  }
  SECTION("not when told so") {
    o.idle_decoder = false;
    const auto res = test::record(o);
    CHECK(res.exit_status == 0);
    CHECK(res.decoder_idled == 0);
    CHECK(res.decoder_raised == 0);
  }
}

// With every CPU taken by processes fsrr does not trace, an idle decoder would wait for ever:
// for a second of files made and removed, it misses its beat and falls behind, the drain
// raises it, and the recording ends complete.
TEST_CASE("an idle decoder starved by busy CPUs is raised, and nothing is lost",
          "[recorder][idle]") {
  REQUIRE_IDLE_DECODER();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "busy.trace";
  o.command = {test::workload(), "churn", "1", tmp.path()};
  recorder::record_result res;
  {
    const cpu_hogs hogs;
    REQUIRE(hogs.size() >= 1);
    res = test::record(o);
  }
  CHECK(res.exit_status == 0);
  CHECK(res.decoder_idled >= 1);
  CHECK(res.decoder_raised >= 1);
  CHECK(res.lost == 0);
  // Not a speed target: a stall. The workload churns for 1 s of wall time; a decoder left idle
  // beside the hogs would get a CPU for milliseconds a second, and the recording would not
  // end for minutes.
  CHECK(res.duration_ns < 10'000'000'000);
  test::trace t(o.output);
  CHECK(t.reader.complete());
  // each round makes four files, writes 100 bytes to each and removes it: all of them there
  const auto writes = t.all(op::write);
  const auto unlinks = t.all(op::unlink);
  CHECK(unlinks.size() >= 4);
  CHECK(unlinks.size() % 4 == 0);
  CHECK(std::count_if(writes.begin(), writes.end(), [](const event* e) {
          return e->size == 100;
        }) == static_cast<long>(unlinks.size()));
}

// The ring buffer's data is mapped once: a record that crosses its end is read in two pieces
// and put together. 6,000 opens of names of 2 to 203 bytes go round the smallest ring (256
// KiB) a dozen times; each path must come out whole.
TEST_CASE("records that cross the ring buffer's end come out whole", "[recorder][ring]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  ::mkdir((tmp / "d").c_str(), 0755);
  recorder::record_options o;
  o.output = tmp / "names.trace";
  o.command = {test::workload(), "names", tmp / "d"};
  o.ring_bytes = 4096;  // rounded up to 256 KiB
  const auto res = test::record(o);
  REQUIRE(res.exit_status == 0);
  CHECK(res.lost == 0);
  CHECK(res.ring_wrapped > 0);
  test::trace t(o.output);
  std::multiset<std::string> opened;
  for (const event* e : t.all(op::openat)) opened.insert(t.path(e->path));
  for (int i = 0; i < 6000; ++i) {
    const std::string p = tmp / ("d/n" + std::to_string(i) + std::string(i % 199, 'x'));
    INFO(p);
    REQUIRE(opened.count(p) == 1);
  }
}

TEST_CASE("creating and removing files for seconds does not grow the recorder's memory",
          "[recorder][memory]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "churn.trace";
  o.command = {test::workload(), "churn", "5", tmp.path()};
  int result[2];
  REQUIRE(::pipe(result) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    uint64_t peak = 0;
    int status = 1;
    try {
      const auto res = test::record(o);
      peak = res.peak_tracked;
      status = res.exit_status;
    } catch (...) {
    }
    (void)!::write(result[1], &peak, sizeof peak);
    ::_exit(status);
  }
  ::close(result[1]);
  // The least of a few samples (the trace writer's block buffers come and go), and when.
  const auto sample = [&] {
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < 5; ++i, sleep_ms(100)) least = std::min(least, rss_of(pid));
    timespec now;
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return std::pair(least, uint64_t(now.tv_sec) * 1000000000 + uint64_t(now.tv_nsec));
  };
  sleep_ms(2000);  // past startup; the ring buffer and the recorder's caches are full
  const auto [early, early_ns] = sample();
  sleep_ms(2000);
  const auto [late, late_ns] = sample();
  uint64_t peak = 0;
  REQUIRE(::read(result[0], &peak, sizeof peak) == sizeof peak);
  ::close(result[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  test::trace t(o.output);
  const trace_summary& sum = t.reader.summary();
  REQUIRE(sum.events > 200000);  // hundreds of thousands of syscalls
  REQUIRE(sum.lost_events == 0);
  // Files the trace met between the two samples: each is a new inode.
  const uint64_t base = t.reader.header().clock_monotonic_ns;
  file_id before = 0, upto = 0;
  for (const auto& e : t.events) {
    if (e.ts + base < early_ns) before = std::max(before, e.file);
    if (e.ts + base < late_ns) upto = std::max(upto, e.file);
  }
  const uint64_t files = upto - before;
  INFO("RSS " << early << " -> " << late << " bytes while " << files << " files came and went; "
              << "at most " << peak << " objects tracked");
  REQUIRE((early > 0 && late > 0));
  CHECK(files > 50000);
  // What the recorder keeps about files, fds and tasks is bounded by the live ones.
  CHECK(peak < 200000);
  // Each new inode is also an entry of the trace's file table, whose interning map the trace
  // writer (format/) keeps for the whole recording: up to 256 bytes a file are allowed here
  // for it, with the heap's slack (88 to 158 were measured, run to run); anything kept per
  // event (six or more a file here, 96 bytes each at least) would exceed that.
  CHECK(late <= early + (8u << 20) + 256 * files);
}

TEST_CASE("SIGKILL mid-recording leaves a trace readable up to its last chunk",
          "[recorder][signals]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "killed.trace";
  o.command = {test::workload(), "loop", "60", tmp.path()};
  const std::string lines = tmp / "loop.txt";
  const int status = record_in_child(o, [&](pid_t pid) {
    wait_for_bytes(lines, 45 * 5);  // 45 lines written
    sleep_ms(2500);  // chunks are flushed at least once a second
    ::kill(pid, SIGKILL);
  });
  REQUIRE(status == 128 + SIGKILL);
  test::trace t(o.output);
  CHECK(!t.reader.has_footer());
  char real[PATH_MAX];
  REQUIRE(::realpath(tmp.path().c_str(), real));
  const auto opens = t.at(op::openat, std::string(real) + "/loop.txt");
  REQUIRE(opens.size() == 1);
  size_t writes = 0;
  for (const auto* e : t.all(op::write)) writes += e->file == opens[0]->file;
  CHECK(writes >= 40);  // ~1.5 s of a write every 20 ms, at least
}

TEST_CASE("SIGTERM stops the command and leaves a complete trace", "[recorder][signals]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "stopped.trace";
  o.command = {test::workload(), "loop", "60", tmp.path()};
  const std::string lines = tmp / "loop.txt";
  std::chrono::steady_clock::time_point stopped;
  const int status = record_in_child(o, [&](pid_t pid) {
    wait_for_bytes(lines, 5);  // the command runs
    stopped = std::chrono::steady_clock::now();
    ::kill(pid, SIGTERM);
  });
  CHECK(status == 0);  // record returned: interrupted, the command's status 128 + SIGTERM
  CHECK(std::chrono::steady_clock::now() - stopped < std::chrono::seconds(10));
  test::trace t(o.output);
  CHECK(t.reader.has_footer());
  CHECK(t.reader.summary().lost_events == 0);
  CHECK(!t.all(op::write).empty());
}

TEST_CASE("the trace is created 0600 and not overwritten unless asked", "[recorder]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "private.trace";
  o.command = {"true"};
  test::record(o);
  struct stat st;
  REQUIRE(::stat(o.output.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  o.overwrite = false;
  const auto refused = recorder::record(o);
  REQUIRE(!refused);
  CHECK(refused.error().status == 0);
  CHECK_THAT(refused.error().message, Catch::Contains("exists"));
  CHECK(::access(o.output.c_str(), F_OK) == 0);  // left alone
}

TEST_CASE("a recording that cannot start says why, in one line, and leaves no trace file",
          "[recorder]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "never.trace";
  const auto refused = [&o](int status, const std::string& message) {
    const auto res = test::try_record(o);
    REQUIRE(!res);
    CHECK(res.error().status == status);
    CHECK(res.error().message == message);
    CHECK(::access(o.output.c_str(), F_OK) != 0);
  };
  SECTION("a command that is not found: 127") {
    o.command = {"no-such-program-anywhere"};
    refused(127, "no-such-program-anywhere: command not found");
  }
  SECTION("a command that cannot be run: 126") {
    const std::string plain = tmp / "plain";
    test::write_file(plain, 10);
    ::chmod(plain.c_str(), 0644);
    o.command = {plain};
    refused(126, "cannot run " + plain + ": Permission denied");
  }
  SECTION("an executable the kernel cannot run: 126, from the child's execve") {
    const std::string garbage = tmp / "garbage";
    test::write_file(garbage, 10);  // no ELF header, no #!
    ::chmod(garbage.c_str(), 0755);
    o.command = {garbage};
    refused(126, "cannot run the command: Exec format error");
  }
  SECTION("--path /") {
    o.command = {"true"};
    o.paths = {"/"};
    refused(0, "--path /: that is everything; leave it out");
  }
  SECTION("a --pid that is gone, found once the programs are loaded") {
    const pid_t gone = ::fork();
    if (gone == 0) ::_exit(0);
    ::waitpid(gone, nullptr, 0);
    o.pids = {gone};
    refused(0, fmt::format("--pid {}: No such process", gone));
  }
}

TEST_CASE("record --snapshot keeps the state of files the workload truncates first",
          "[recorder][tree]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  make_files(tmp / "data", 3);
  test::write_file(tmp / "data/big", 5000);
  char real[PATH_MAX];
  REQUIRE(::realpath(tmp.path().c_str(), real));
  const std::string d = std::string(real) + "/data";
  recorder::record_options o;
  o.output = tmp / "snap.trace";
  o.command = {"sh", "-c", "echo x > " + d + "/big; rm " + d + "/f0"};
  o.snapshot_dirs = {d};
  REQUIRE(test::record(o).exit_status == 0);
  test::trace t(o.output);
  const tree_entry* big = t.tree_entry_at(d + "/big");
  REQUIRE(big != nullptr);
  CHECK(big->size == 5000);  // as it was, not as the O_TRUNC open left it
  CHECK(t.tree_entry_at(d + "/f0") != nullptr);
  CHECK(t.tree_entry_at(d + "/f1") != nullptr);  // untouched, but inside the snapshot
  size_t entries = 0;
  for (const auto& e : t.reader.tree()) entries += t.path(e.path) == d + "/big";
  CHECK(entries == 1);  // not added again at its first touch
}

TEST_CASE("a failed lookup puts the directories it searched in the initial tree",
          "[recorder][tree]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  REQUIRE(::mkdir((tmp / "bin").c_str(), 0750) == 0);
  REQUIRE(::mkdir((tmp / "etc").c_str(), 0755) == 0);
  test::write_file(tmp / "etc/plain", 10);
  char real[PATH_MAX];
  REQUIRE(::realpath(tmp.path().c_str(), real));
  const std::string d = real;
  recorder::record_options o;
  o.output = tmp / "lookups.trace";
  // A PATH search that misses in bin/, a probe below a file (ENOTDIR), and a lookup in a
  // directory the workload makes only afterwards.
  o.command = {"sh", "-c",
               "PATH=" + d + "/bin:/usr/bin:/bin; nosuchprogram 2>/dev/null; "
               "test -e " + d + "/etc/plain/x; test -e " + d + "/later/x; mkdir " + d +
                   "/later; exit 0"};
  REQUIRE(test::record(o).exit_status == 0);
  test::trace t(o.output);
  const tree_entry* bin = t.tree_entry_at(d + "/bin");
  REQUIRE(bin != nullptr);
  CHECK(bin->mode == (S_IFDIR | 0750));  // the real directory, looked at
  CHECK(t.tree_entry_at(d + "/bin/nosuchprogram") == nullptr);
  CHECK(t.tree_entry_at(d + "/etc/plain") == nullptr);  // a file: left out, not a dir
  CHECK(t.tree_entry_at(d + "/later") == nullptr);      // born after the lookup
  REQUIRE(t.at(op::newfstatat, d + "/later/x").size() == 1);
  CHECK(t.at(op::newfstatat, d + "/later/x")[0]->result == -ENOENT);
}

TEST_CASE("a directory the workload lists puts its entries in the initial tree",
          "[recorder][tree]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  REQUIRE(::mkdir((tmp / "d").c_str(), 0755) == 0);
  REQUIRE(::mkdir((tmp / "d/sub").c_str(), 0700) == 0);
  test::write_file(tmp / "d/a", 10);
  test::write_file(tmp / "d/b", 20000);
  REQUIRE(::symlink("a", (tmp / "d/l").c_str()) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // ctimes clearly before
  char real[PATH_MAX];
  REQUIRE(::realpath(tmp.path().c_str(), real));
  const std::string d = std::string(real) + "/d";
  recorder::record_options o;
  o.output = tmp / "list.trace";
  // Names only (ls -f: no stat), then one made after the listing, and a listing of a
  // directory the workload made.
  o.command = {"sh", "-c",
               "ls -f " + d + " >/dev/null; touch " + d + "/new; mkdir " + d + "/made; touch " +
                   d + "/made/x; ls -f " + d + "/made >/dev/null"};
  REQUIRE(test::record(o).exit_status == 0);
  test::trace t(o.output);
  const tree_entry* b = t.tree_entry_at(d + "/b");
  REQUIRE(b != nullptr);
  CHECK(b->size == 20000);
  CHECK(t.tree_entry_at(d + "/a") != nullptr);
  const tree_entry* sub = t.tree_entry_at(d + "/sub");
  REQUIRE(sub != nullptr);
  CHECK(sub->mode == (S_IFDIR | 0700));
  const tree_entry* l = t.tree_entry_at(d + "/l");
  REQUIRE(l != nullptr);
  CHECK(S_ISLNK(l->mode));
  CHECK(t.tree_entry_at(d + "/new") == nullptr);  // the workload's
  CHECK(t.tree_entry_at(d + "/made") == nullptr);
  CHECK(t.tree_entry_at(d + "/made/x") == nullptr);
  CHECK(t.all(op::getdents64).size() == 4);  // each listing, then its end
}

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
}  // namespace

TEST_CASE("a failed load's log goes to the file the error names, not to the terminal",
          "[recorder][load]") {
  test::temp_dir tmp;
  const std::string log = "libbpf: prog 'fsrr_sys_exit': BPF program load failed: Permission denied\n"
                          "0: R1=ctx() R10=fp0\n; int fsrr_sys_exit(...)\n";
  ::setenv("TMPDIR", tmp.path().c_str(), 1);
  ::unsetenv("FSRR_BPF_LOG");
  const std::string made = recorder::save_load_log(log);
  REQUIRE(made.rfind(tmp.path() + "/fsrr-bpf-load.", 0) == 0);
  CHECK(made.size() == tmp.path().size() + std::string("/fsrr-bpf-load.XXXXXX.log").size());
  CHECK(slurp(made) == log);
  struct stat st;
  REQUIRE(::stat(made.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // mkstemps: the log may name the traced programs
  // $FSRR_BPF_LOG chooses the file; nothing is written for an empty log
  const std::string chosen = tmp / "verifier.log";
  ::setenv("FSRR_BPF_LOG", chosen.c_str(), 1);
  CHECK(recorder::save_load_log(log) == chosen);
  CHECK(slurp(chosen) == log);
  CHECK(recorder::save_load_log("").empty());
  ::setenv("FSRR_BPF_LOG", (tmp / "no/such/dir/x.log").c_str(), 1);
  CHECK(recorder::save_load_log(log).empty());
  ::unsetenv("FSRR_BPF_LOG");
  ::unsetenv("TMPDIR");
}
