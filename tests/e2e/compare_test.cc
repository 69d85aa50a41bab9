// fsrr compare, as users run it: a recorded rsync replayed on file systems fsrr makes itself,
// the report read back, the page opened by headless Chromium, and nothing left behind.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

// An rsync of a small seed-shaped tree (2,222 files) with 24 more files of 1 MiB, so that data,
// not metadata, fills most of the space; recorded once for every test here.
struct recorded_rsync {
  temp_dir work{"/dev/shm"};
  std::string trace = work / "rsync.trace";
  recorded_rsync() {
    REQUIRE(run(fmt::format("{}/bench/make_seed_tree.sh {} 0.02 >/dev/null", SOURCE_DIR,
                            work / "src")) == 0);
    REQUIRE(run(fmt::format("for i in $(seq 10 33); do head -c 1M /dev/urandom >{}/1M#$i; done",
                            work / "src")) == 0);
    REQUIRE(run(fmt::format("cd {} && {} record -o {} -- rsync -aAHX src/ dst 2>/dev/null",
                            work.path(), FSRR_BIN, trace)) == 0);
  }
  static recorded_rsync& get() {
    static recorded_rsync r;
    return r;
  }
};

size_t files_in(const std::string& dir) {
  temp_dir scratch("/dev/shm");
  size_t n = 0;
  run(fmt::format("find {} -mindepth 1 | wc -l >{}", dir, scratch / "count"));
  std::ifstream(scratch / "count") >> n;
  return n;
}

nlohmann::json row(const nlohmann::json& result, const std::string& name) {
  for (const auto& r : result["fs"])
    if (r["name"] == name) return r;
  FAIL("no row " << name);
  return {};
}

}  // namespace

TEST_CASE(
    "compare replays a recorded rsync on tmpfs, ext4, xfs, btrfs and btrfs with lzo, "
    "every row verified, and writes its report and page",
    "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  auto& rec = recorded_rsync::get();
  temp_dir out("/dev/shm"), images("/dev/shm");
  const int status = run(fmt::format(
      "{} compare {} --fs tmpfs --fs ext4 --fs xfs --fs btrfs --fs btrfs:compress=lzo --runs 2 "
      "--data compress:2 --images {} -o {} >{} 2>{}",
      FSRR_BIN, rec.trace, images.path(), out.path(), out / "table.txt", out / "log.txt"));
  INFO(slurp(out / "log.txt") << slurp(out / "table.txt"));
  REQUIRE(status == 0);
  const auto result = nlohmann::json::parse(slurp(out / "compare.json"));
  REQUIRE(result["fs"].size() == 5);
  for (const auto& r : result["fs"]) {
    INFO(r["name"]);
    CHECK(r["verify"] == true);
    CHECK(r["mismatches"] == 0);
    CHECK(r["runs"].size() == 2);
    CHECK(r["mib_per_s"]["median"] > 0);
    CHECK(r["mib_per_s"]["min"] <= r["mib_per_s"]["median"]);
    CHECK(r["mib_per_s"]["median"] <= r["mib_per_s"]["max"]);
    CHECK(r["ops"].contains("openat"));
    CHECK(r["timeline"].size() >= 1);
    CHECK(r["space_used_bytes"] > 0);
    // dst: 2,000 x 1 KiB, 200 x 4 KiB, 20 x 10 KiB, 2 x 1000 KiB and 24 x 1 MiB
    CHECK(r["logical_bytes"] == 2000 * 1024 + 200 * 4096 + 20 * 10240 + 2 * 1024000 + 24 * 1048576);
    CHECK(r["placement"] == nlohmann::json::array({rec.work / "dst"}));
  }
  // rsync copies src to dst: src is only read, so it is prepared on the source file system
  // (beside what rsync reads of the system: /etc/passwd and the like); dst is written
  const auto& on_source = result["placement"]["on_source"];
  CHECK(std::count(on_source.begin(), on_source.end(), rec.work / "src") == 1);
  for (const auto& p : on_source)
    CHECK((p == rec.work / "src" || p.get<std::string>().rfind(rec.work.path(), 0) != 0));
  CHECK(result["placement"]["on_test"] == nlohmann::json::array({rec.work / "dst"}));
  CHECK(result["placement"]["source_fs"] == "tmpfs");
  // the source is fixed, as the disk one copies from: prepared by the first run only (2,246
  // files of src, and what rsync read of the system), verified by every run
  CHECK(row(result, "tmpfs")["runs"][0]["prepare"]["files"] > 2246);
  CHECK(row(result, "tmpfs")["runs"][1]["prepare"]["files"] == 0);
  CHECK(row(result, "xfs")["runs"][0]["prepare"]["files"] == 0);
  // data that compresses 2:1 takes clearly less room on btrfs with lzo
  const uint64_t plain = row(result, "btrfs")["space_used_bytes"];
  const uint64_t lzo = row(result, "btrfs:compress=lzo")["space_used_bytes"];
  CHECK(lzo < plain * 3 / 4);
  CHECK(row(result, "btrfs:compress=lzo")["mount"] == "compress=lzo");
  CHECK(row(result, "xfs")["tool"].get<std::string>().find("mkfs.xfs") != std::string::npos);
  // the table names every row; nothing is left mounted; the images are gone
  const std::string table = slurp(out / "table.txt");
  for (const char* fs : {"tmpfs", "ext4", "xfs", "btrfs", "btrfs:compress=lzo"})
    CHECK(table.find(fs) != std::string::npos);
  CHECK(left_behind(images.path()) == "");
  CHECK(files_in(images.path()) == 0);

  // the page, as a person sees it: after its scripts ran, every file system with its value
  const int shown = run(fmt::format("{}/tests/lab/page_in_chromium.sh {} {} >{} 2>{}", SOURCE_DIR,
                                    out / "compare.html", out / "compare.png", out / "dom.html",
                                    out / "chromium.log"));
  INFO(slurp(out / "chromium.log"));
  REQUIRE(shown == 0);
  const std::string dom = slurp(out / "dom.html");
  for (const auto& r : result["fs"]) {
    CHECK(dom.find(r["name"].get<std::string>()) != std::string::npos);
    CHECK(dom.find(fmt::format("{:.1f}", r["mib_per_s"]["median"].get<double>())) !=
          std::string::npos);
  }
  struct stat st;
  CHECK(::stat((out / "compare.png").c_str(), &st) == 0);
  CHECK(st.st_size > 10000);
}

TEST_CASE(
    "compare --repeat 3 replays three copies on one file system, and space grows with each copy",
    "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  auto& rec = recorded_rsync::get();
  temp_dir out("/dev/shm"), images("/dev/shm");
  const int status =
      run(fmt::format("{} compare {} --fs ext4 --runs 1 --repeat 3 --data random "
                      "--images {} -o {} >/dev/null 2>{}",
                      FSRR_BIN, rec.trace, images.path(), out.path(), out / "log.txt"));
  INFO(slurp(out / "log.txt"));
  REQUIRE(status == 0);
  const auto result = nlohmann::json::parse(slurp(out / "compare.json"));
  const auto copies = result["fs"][0]["copies"];
  REQUIRE(copies.size() == 3);
  const uint64_t one = copies[0]["space_used_bytes"], two = copies[1]["space_used_bytes"],
                 three = copies[2]["space_used_bytes"];
  CHECK(two > one + one / 2);
  CHECK(three > two + one / 2);
  CHECK(result["fs"][0]["verify"] == true);
  CHECK(left_behind(images.path()) == "");
}

TEST_CASE("compare interrupted with SIGINT leaves no mount, loop device or image", "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  auto& rec = recorded_rsync::get();
  temp_dir out("/dev/shm"), images("/dev/shm");
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string log = out / "log.txt";
    std::freopen(log.c_str(), "w", stderr);
    std::freopen("/dev/null", "w", stdout);
    ::execl(FSRR_BIN, FSRR_BIN, "compare", rec.trace.c_str(), "--fs", "ext4", "--fs", "xfs", "--fs",
            "btrfs", "--runs", "5", "--images", images.path().c_str(), "-o", out.path().c_str(),
            nullptr);
    ::_exit(127);
  }
  // well into it: the second run has begun
  for (int i = 0; i < 3000 && slurp(out / "log.txt").find("[2/15]") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string log = slurp(out / "log.txt");
  INFO(log);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(log.find("interrupted") != std::string::npos);
  CHECK(left_behind(images.path()) == "");
  CHECK(files_in(images.path()) == 0);
}

TEST_CASE("compare refuses what it cannot use, with one line and nothing made", "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  temp_dir out("/dev/shm"), images("/dev/shm");
  write_file(out / "not.trace", 10);
  CHECK(run(fmt::format("{} compare {} --fs ext4:size=1Q -o {} 2>{}", FSRR_BIN, out / "not.trace",
                        out.path(), out / "e1")) == 1);
  CHECK(slurp(out / "e1").find("size=1Q is not a size") != std::string::npos);
  CHECK(run(fmt::format("{} compare {} --fs tmpfs@ext4 -o {} 2>{}", FSRR_BIN, out / "not.trace",
                        out.path(), out / "e2")) == 1);
  CHECK(slurp(out / "e2").find("tmpfs has no image") != std::string::npos);
  write_file(images / "occupied", 1);
  auto& rec = recorded_rsync::get();
  CHECK(run(fmt::format("{} compare {} --fs disk={} --runs 1 -o {} 2>{}", FSRR_BIN, rec.trace,
                        images.path(), out.path(), out / "e3")) == 1);
  CHECK(slurp(out / "e3").find("is not empty") != std::string::npos);
  CHECK(slurp(images / "occupied") == "e");  // untouched
  CHECK(run(fmt::format("{} compare {} --fs tmpfs -o {} 2>{}", FSRR_BIN, rec.trace,
                        images / "occupied", out / "e4")) == 1);
  CHECK(slurp(out / "e4") == "fsrr: -o " + images / "occupied" + ": not a directory\n");
}

TEST_CASE(
    "compare --realtime replays at the recorded pace SCHED_FIFO, and where that is not "
    "allowed it stops in one line before any file system is made",
    "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  if (run("chrt -f 2 true 2>/dev/null") != 0) {  // root in a cgroup without real-time time
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true")
      FAIL("SCHED_FIFO is not allowed, and CI=true forbids skipping");
    WARN("skipped: SCHED_FIFO at priority 2 is not allowed here");
    return;
  }
  auto& rec = recorded_rsync::get();
  temp_dir out("/dev/shm"), images("/dev/shm");
  const std::string cmd =
      fmt::format("{} compare {} --fs ext4 --runs 1 --timing faithful --realtime --images {} -o {}",
                  FSRR_BIN, rec.trace, images.path(), out.path());
  // No CAP_SYS_NICE and no RLIMIT_RTPRIO: root, but not allowed SCHED_FIFO.
  CHECK(run("prlimit --rtprio=0:0 setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice " + cmd +
            " >/dev/null 2>" + out / "e1") == 1);
  CHECK(slurp(out / "e1") ==
        "fsrr: --realtime: this process may not use SCHED_FIFO (Operation not permitted): it "
        "needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of 2, and real-time time in its cgroup\n");
  CHECK(files_in(images.path()) == 0);  // no image, no mount point
  CHECK(files_in(out.path()) == 1);     // e1 alone: no compare.json
  const int status = run(cmd + " >/dev/null 2>" + out / "log.txt");
  INFO(slurp(out / "log.txt"));
  REQUIRE(status == 0);
  const auto result = nlohmann::json::parse(slurp(out / "compare.json"));
  CHECK(result["timing"] == "faithful");
  CHECK(result["realtime"] == true);
  const auto& run0 = result["fs"][0]["runs"][0];
  CHECK(run0["timing"] == "faithful");
  // every recorded thread's replay thread, and the one that hands them their ops
  CHECK(run0["realtime_threads"].get<uint64_t>() == run0["threads"].get<uint64_t>() + 1);
  CHECK(run0["mismatches"] == 0);
  CHECK(result["fs"][0]["verify"] == true);
  // The row carries its typical run's lateness. An op is never issued before its thread's
  // previous op returned, so the part its ops forced is at most the whole (op latencies are
  // timed with the TSC, lateness with CLOCK_MONOTONIC: they agree to well within 1%).
  const auto& row = result["fs"][0];
  CHECK(row["lateness_ns"] == run0["lateness_ns"]);
  CHECK(row["op_bound_lateness_ns"] == run0["op_bound_lateness_ns"]);
  const uint64_t late_max = row["lateness_ns"]["max"], bound_max = row["op_bound_lateness_ns"]["max"];
  CHECK(bound_max <= late_max + late_max / 100 + 1000);
  CHECK(left_behind(images.path()) == "");
}

TEST_CASE("compare overwrites an earlier result only with --force", "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  auto& rec = recorded_rsync::get();
  temp_dir out("/dev/shm"), images("/dev/shm");
  write_file(out / "compare.json", 3);
  const std::string cmd = fmt::format("{} compare {} --fs tmpfs --runs 1 --images {} -o {}",
                                      FSRR_BIN, rec.trace, images.path(), out.path());
  CHECK(run(cmd + " >/dev/null 2>" + out / "e1") == 1);
  CHECK(slurp(out / "e1") ==
        "fsrr: " + out / "compare.json exists (use --force to overwrite it)\n");
  CHECK(slurp(out / "compare.json") == "eee");
  CHECK(run(cmd + " --force >/dev/null 2>/dev/null") == 0);
  CHECK(nlohmann::json::parse(slurp(out / "compare.json"))["fs"][0]["name"] == "tmpfs");
  // an --images directory that does not exist yet is made, and removed when done
  const std::string fresh = images / "not-yet";
  CHECK(run(fmt::format("{} compare {} --fs tmpfs --runs 1 --images {} -o {} --force >/dev/null "
                        "2>/dev/null",
                        FSRR_BIN, rec.trace, fresh, out.path())) == 0);
  CHECK(::access(fresh.c_str(), F_OK) != 0);
  // a file is no place for images: one line, and the file as it was
  CHECK(run(fmt::format("{} compare {} --fs tmpfs --runs 1 --images {} -o {} --force >/dev/null "
                        "2>{}",
                        FSRR_BIN, rec.trace, out / "e1", out.path(), out / "e2")) == 1);
  CHECK(slurp(out / "e2") == "fsrr: --images " + out / "e1" + ": not a directory\n");
  CHECK(slurp(out / "e1").starts_with("fsrr: "));
}

TEST_CASE("compare refuses a baseline of the wrong shape with one line, and writes nothing",
          "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  auto& rec = recorded_rsync::get();
  temp_dir out("/dev/shm"), images("/dev/shm");
  // JSON, and a row of the right name, but its throughput a number, not a spread
  std::ofstream(out / "old.json") << R"({"fs": [{"name": "tmpfs", "mib_per_s": 5}]})";
  CHECK(run(fmt::format("{} compare {} --fs tmpfs --runs 1 --images {} --baseline {} -o {} "
                        ">/dev/null 2>{}",
                        FSRR_BIN, rec.trace, images.path(), out / "old.json", out / "res",
                        out / "e")) == 1);
  const std::string e = slurp(out / "e");  // the runs' progress, then the one line
  CHECK(e.substr(e.rfind('\n', e.size() - 2) + 1) ==
        "fsrr: --baseline " + out / "old.json" +
            ": not a compare.json ([json.exception.type_error.306] cannot use value() with "
            "number)\n");
  CHECK(files_in(out / "res") == 0);
  CHECK(left_behind(images.path()) == "");
}

TEST_CASE("compare refuses images that would not fit where they go, before making any",
          "[compare]") {
  if (!can_record() || !require_root("compare")) return;
  auto& rec = recorded_rsync::get();
  temp_dir out("/dev/shm"), small("/dev/shm");
  // a 64 MiB tmpfs of the test's own, unmounted however the test ends
  REQUIRE(run(fmt::format("mount -t tmpfs -o size=64M fsrr-test {}", small.path())) == 0);
  struct unmount {
    std::string dir;
    ~unmount() { run("umount " + dir); }
  } later{small.path()};
  CHECK(run(fmt::format("{} compare {} --fs ext4 --runs 1 --images {} -o {} >/dev/null 2>{}",
                        FSRR_BIN, rec.trace, small.path(), out.path(), out / "e")) == 1);
  const std::string e = slurp(out / "e");
  CHECK(e.find("fsrr: " + small.path() +
               " has 0.1 GiB free; the images of this compare need about") == 0);
  CHECK(std::count(e.begin(), e.end(), '\n') == 1);
  CHECK(files_in(small.path()) == 0);
}
