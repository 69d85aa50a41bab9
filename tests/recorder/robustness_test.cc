// Losses are reported, not hidden; a killed recorder leaves a readable trace; a stopped one a
// complete trace; the output is private and never overwritten by accident.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <thread>

#include <catch2/catch.hpp>

#include "helpers.h"
#include "trace_error.h"

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

}  // namespace

TEST_CASE("a tiny ring buffer loses events, and the trace says so", "[recorder][loss]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "lossy.trace";
  o.command = {test::workload(), "burst", tmp.path()};
  o.ring_bytes = 4096;  // smaller than the workload's deep open; its preads come in a burst

  SECTION("counted per CPU, stored, shown, and never complete") {
    const auto res = test::record(o);
    REQUIRE(res.exit_status == 0);
    CHECK(res.lost > 0);
    test::trace t(o.output);
    CHECK(t.reader.summary().lost_events == res.lost);
    CHECK(t.reader.has_footer());
    CHECK(!t.reader.complete());
  }
  SECTION("--strict makes any loss a failure") {
    o.strict = true;
    CHECK_THROWS_AS(test::record(o), trace_error);
    test::trace t(o.output);  // still written, still readable
    CHECK(t.reader.summary().lost_events > 0);
  }
}

TEST_CASE("SIGKILL mid-recording leaves a trace readable up to its last chunk",
          "[recorder][signals]") {
  REQUIRE_RECORDING();
  test::temp_dir tmp;
  recorder::record_options o;
  o.output = tmp / "killed.trace";
  o.command = {test::workload(), "loop", "5", tmp.path()};
  const int status = record_in_child(o, [](pid_t pid) {
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
  o.command = {test::workload(), "loop", "30", tmp.path()};
  const auto start = std::chrono::steady_clock::now();
  const int status = record_in_child(o, [](pid_t pid) {
    sleep_ms(800);
    ::kill(pid, SIGTERM);
  });
  CHECK(status == 0);  // record returned: interrupted, the command's status 128 + SIGTERM
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
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
  CHECK_THROWS_AS(recorder::record(o), trace_error);
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
