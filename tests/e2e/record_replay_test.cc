// Real programs recorded with `fsrr record`, replayed with `fsrr replay` on tmpfs and on
// ext4, xfs and btrfs images, checked with `fsrr verify`: the whole tool, as users run it.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"
#include "tree_fixture.h"

namespace {

using fsrr::test::can_record;
using fsrr::test::run;
using fsrr::test::slurp;

struct outcome {
  int status = -1;
  nlohmann::json report;
};

// `fsrr replay TRACE TARGET --timing afap --report ...`
outcome replay(const std::string& trace, const std::string& target, const std::string& report) {
  outcome o;
  o.status = run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{}.out 2>&1",
                             FSRR_BIN, trace, target, report, report));
  std::ifstream in(report);
  if (in) o.report = nlohmann::json::parse(in);
  return o;
}

int verify(const std::string& trace, const std::string& target, const std::string& log) {
  return run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, trace, target, log));
}

// Ops whose results rightly depend on the file system: reflink support (FICLONE) and the
// byte counts of directory listings.
const std::set<std::string> fs_dependent = {"ioctl", "getdents64"};

// Records `command` (run by sh in `work`), then replays and verifies it on tmpfs (every
// result as recorded) and on ext4, xfs and btrfs (only fs-dependent results may differ).
void record_and_replay(const fsrr::test::temp_dir& work, const std::string& command,
                       uint64_t min_events) {
  const std::string trace = work / "t.trace";
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- sh -c '{}' >{} 2>&1", work.path(), FSRR_BIN,
                          trace, command, work / "record.log")) == 0);
  INFO(slurp(work / "record.log"));
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, trace, work / "info.json")) == 0);
  const auto info = nlohmann::json::parse(slurp(work / "info.json"));
  CHECK(info["lost_events"] == 0);
  CHECK(info["complete"] == true);
  CHECK(info["events"].get<uint64_t>() >= min_events);

  {
    fsrr::test::temp_dir target("/dev/shm");
    const auto o = replay(trace, target.path(), work / "tmpfs.json");
    INFO("tmpfs replay: " << slurp(work / "tmpfs.json.out"));
    CHECK(o.status == 0);
    CHECK(o.report["mismatches"] == 0);
    CHECK(verify(trace, target.path(), work / "verify.log") == 0);
    INFO(slurp(work / "verify.log"));
  }
  if (!fsrr::test::require_root("loop-mounted file systems")) return;
  for (const char* fs : {"ext4", "xfs", "btrfs"}) {
    fsrr::test::loop_fs mnt(fs, 512);
    const std::string report = work / (std::string(fs) + ".json");
    const auto o = replay(trace, mnt.path(), report);
    INFO(fs << " replay: " << slurp(report + ".out"));
    CHECK(o.status == 0);
    for (const auto& [op, s] : o.report["ops"].items())
      if (!fs_dependent.count(op)) CHECK(s["mismatches"] == 0);
    const std::string log = work / (std::string(fs) + ".verify");
    CHECK(verify(trace, mnt.path(), log) == 0);
    INFO(slurp(log));
  }
}

}  // namespace

TEST_CASE("a recorded cp -a replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  record_and_replay(work, "cp -a data copy", 200);
}

TEST_CASE("a recorded rsync -aAHX replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  record_and_replay(work, "rsync -aAHX data/ copy/", 200);
}

TEST_CASE("a recorded tar c | tar x replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  REQUIRE(::mkdir((work / "copy").c_str(), 0755) == 0);
  record_and_replay(work, "tar -C data -cf - . | tar -C copy -xf -", 100);
}

TEST_CASE("a recorded dd oflag=sync replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  record_and_replay(work, "dd if=/dev/zero of=out.img bs=64k count=32 oflag=sync status=none", 32);
}

TEST_CASE("a recorded multi-threaded writer replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  record_and_replay(work, fmt::format("{} . 4 8", MT_WRITER), 4 * 8 * 20);
}
