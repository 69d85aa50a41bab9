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
using fsrr::test::record_and_replay;
using fsrr::test::run;
using fsrr::test::slurp;

int verify(const std::string& trace, const std::string& target, const std::string& log) {
  return run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, trace, target, log));
}

}  // namespace

// The two environment-dependent cases that made comparisons wrong: a cp recorded on tmpfs
// (FICLONE refused there, allowed on xfs and btrfs) and an mv across two file systems (rename
// EXDEV, then copy and unlink) replayed into one TARGET.
TEST_CASE("a cp -a recorded on tmpfs replays on reflink file systems as the copy it was") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  const std::string trace = work / "t.trace";
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- cp -a data copy 2>/dev/null", work.path(),
                          FSRR_BIN, trace)) == 0);
  if (!fsrr::test::require_root("loop-mounted file systems")) return;
  for (const char* fs : {"xfs", "btrfs"}) {
    for (const bool issue_all : {false, true}) {
      fsrr::test::loop_fs mnt(fs, 512);
      const std::string report = work / fmt::format("{}{}.json", fs, issue_all ? "-all" : "");
      REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress {} --report {} >{}.out 2>&1",
                              FSRR_BIN, trace, mnt.path(), issue_all ? "--issue-all" : "", report,
                              report)) == 0);
      INFO(fs << (issue_all ? " --issue-all" : "") << ": " << slurp(report + ".out"));
      const auto r = nlohmann::json::parse(slurp(report));
      const uint64_t clones = r["ops"]["ioctl"]["count"];
      CHECK(clones >= 10);  // one FICLONE per regular file
      CHECK(r["differences"]["ioctl"] == clones);
      CHECK(r["differences_by_cause"]["no_clone"] == clones);
      CHECK(r["ops"]["copy_file_range"]["mismatches"] == 0);
      if (!issue_all) {
        CHECK(r["mismatches"] == 0);
        CHECK(r["ops"]["ioctl"]["errors"] == clones);  // not issued: the recorded refusal
      } else {
        CHECK(r["ops"]["ioctl"]["errors"] == 0);  // issued: this target clones
      }
      CHECK(verify(trace, mnt.path(), report + ".verify") == 0);
    }
  }
}

TEST_CASE("an mv across two file systems replays into one target as the copy it was") {
  if (!can_record()) return;
  if (!fsrr::test::require_root("loop-mounted file systems")) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  const std::string trace = work / "t.trace";
  {
    // The move's destination is another file system. The source is snapshotted first: mv
    // removes it, so a look after the fact would not find its symlinks' targets.
    fsrr::test::loop_fs disk("ext4", 256);
    REQUIRE(run(fmt::format("{} record -o {} --snapshot {} -- mv {} {}/moved 2>{}", FSRR_BIN,
                            trace, work / "data", work / "data", disk.path(),
                            work / "record.log")) == 0);
  }
  INFO(slurp(work / "record.log"));
  for (const char* fs : {"tmpfs", "ext4", "xfs", "btrfs"}) {
    fsrr::test::loop_fs mnt(fs, 512);
    const std::string report = work / fmt::format("{}.json", fs);
    const int status =
        run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{}.out 2>&1",
                        FSRR_BIN, trace, mnt.path(), report, report));
    INFO(fs << ": " << slurp(report + ".out"));
    REQUIRE(status == 0);
    const auto r = nlohmann::json::parse(slurp(report));
    CHECK(r["mismatches"] == 0);  // listings split otherwise count as differences
    CHECK(r["differences"]["renameat2"] == 1);  // the move itself, refused: EXDEV
    CHECK(r["differences_by_cause"]["cross_device"].get<uint64_t>() >= 10);  // and each copy
    CHECK(verify(trace, mnt.path(), report + ".verify") == 0);
  }
}

// The reverse: the target refuses what the recording's file system allowed. A cp recorded
// within one file system, replayed with its source and copy on two (--map): the kernel
// refuses copy_file_range with EXDEV, the replay copies the bytes itself.
TEST_CASE("a copy the target refuses across its file systems is made through user space") {
  if (!can_record()) return;
  if (!fsrr::test::require_root("loop-mounted file systems")) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  const std::string trace = work / "t.trace";
  REQUIRE(::mkdir((work / "out").c_str(), 0755) == 0);
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- cp -a data out/copy 2>/dev/null",
                          work.path(), FSRR_BIN, trace)) == 0);
  fsrr::test::temp_dir target("/dev/shm");
  fsrr::test::loop_fs disk("ext4", 256);
  const std::string report = work / "r.json", map = work / "out" + "=" + disk.path();
  REQUIRE(run(fmt::format("{} replay {} {} --map {} --timing afap --no-progress --report {} "
                          ">{}.out 2>&1",
                          FSRR_BIN, trace, target.path(), map, report, report)) == 0);
  INFO(slurp(report + ".out"));
  const auto r = nlohmann::json::parse(slurp(report));
  CHECK(r["mismatches"] == 0);
  CHECK(r["differences"]["copy_file_range"].get<uint64_t>() >= 10);
  CHECK(r["differences_by_cause"]["cross_device"] == r["differences"]["copy_file_range"]);
  CHECK(verify(trace, target.path() + " --map " + map, report + ".verify") == 0);
}

TEST_CASE("a recorded cp -a replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  record_and_replay(work.path(), "cp -a data copy", 200);
}

TEST_CASE("a recorded rsync -aAHX replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  record_and_replay(work.path(), "rsync -aAHX data/ copy/", 200);
}

TEST_CASE("a recorded tar c | tar x replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  fsrr::test::build_tree_fixture(work.path());
  REQUIRE(::mkdir((work / "copy").c_str(), 0755) == 0);
  record_and_replay(work.path(), "tar -C data -cf - . | tar -C copy -xf -", 100);
}

TEST_CASE("a recorded dd oflag=sync replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  record_and_replay(work.path(), "dd if=/dev/zero of=out.img bs=64k count=32 oflag=sync status=none", 32);
}

TEST_CASE("a recorded multi-threaded writer replays and verifies on every file system") {
  if (!can_record()) return;
  fsrr::test::temp_dir work("/dev/shm");
  record_and_replay(work.path(), fmt::format("{} . 4 8", MT_WRITER), 4 * 8 * 20);
}
