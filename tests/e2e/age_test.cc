// fsrr age, as users run it: an image made and aged to a share of its capacity, the same
// from the same seed, with its free space in more pieces after churn.
#include <sys/stat.h>

#include <fstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

nlohmann::json aged(const temp_dir& work, const std::string& spec, const std::string& profile,
                    const std::string& name) {
  const std::string image = work / (name + ".img"), json = work / (name + ".json");
  const int status = run(fmt::format("{} age {} {} --age {} --quiet --json {} >{} 2>&1", FSRR_BIN,
                                     spec, image, profile, json, work / (name + ".log")));
  INFO(slurp(work / (name + ".log")));
  REQUIRE(status == 0);
  return nlohmann::json::parse(slurp(json));
}

// The aged files of an image, by name and size (not the directories: how large ext4 lets a
// directory grow after deletes is its own choice, 24 or 28 KiB for the same entries).
std::string listing(const temp_dir& work, const std::string& name) {
  const std::string mnt = work / (name + ".mnt"), out = work / (name + ".list");
  REQUIRE(run(fmt::format("mkdir {0} && mount -o loop,ro {1} {0} && (cd {0}/.fsrr-aged && find . -type f "
                          "-printf '%P %s\\n' | sort) >{2}; umount {0}",
                          mnt, work / (name + ".img"), out)) == 0);
  return slurp(out);
}

}  // namespace

TEST_CASE("age fills ext4, xfs and btrfs images of 1 GiB within 2% of the profile, churned",
          "[age]") {
  if (!can_record() || !require_root("age")) return;
  temp_dir work("/dev/shm");
  for (const char* fs : {"ext4", "xfs", "btrfs"}) {
    INFO(fs);
    const auto j = aged(work, fmt::format("{}:size=1G", fs), "fill=50,churn=2,sizes=mixed,seed=3", fs);
    CHECK(j["fill"].get<double>() == Approx(0.50).margin(0.02));
    CHECK(j["full_early"] == false);
    CHECK(j["deleted"].get<uint64_t>() > 0);
    CHECK(j["written"].get<uint64_t>() == j["files"].get<uint64_t>() + j["deleted"].get<uint64_t>());
    CHECK(j["appends"].get<uint64_t>() > 0);
    CHECK(j["layout"]["extents_per_file"].get<double>() >= 1.0);
    if (std::string(fs) != "btrfs") CHECK(j["free_space_fragments"].get<int64_t>() > 0);
    ::unlink((work / (std::string(fs) + ".img")).c_str());
  }
  CHECK(left_behind(work.path()).empty());
}

TEST_CASE("age: the same profile and seed leave the same files, and churn leaves free space in more pieces",
          "[age]") {
  if (!can_record() || !require_root("age")) return;
  temp_dir work("/dev/shm");
  const std::string profile = "fill=60,churn=3,sizes=home,seed=1";
  const auto a = aged(work, "ext4:size=1G", profile, "a");
  const auto b = aged(work, "ext4:size=1G", profile, "b");
  const std::string first = listing(work, "a");
  CHECK(first.size() > 1000);
  CHECK(first == listing(work, "b"));
  CHECK(a["files"] == b["files"]);
  // (not xfs: idle it left the same files three times in three, but beside other tests in CI
  // once not — its accounting at a check still depends on the moment; docs/commands/age.md)
  // where the files lie is ext4's to choose, and differs from run to run (242 and 241 free
  // pieces idle, 230 and 247 under load): the files are what must be the same
  // another seed, other files
  aged(work, "ext4:size=1G", "fill=60,churn=3,sizes=home,seed=2", "c");
  CHECK(listing(work, "c") != first);
  // no churn: the free space stays in few large pieces
  const auto fresh = aged(work, "ext4:size=1G", "fill=60,churn=0,sizes=home,seed=1", "d");
  CHECK(a["free_space_fragments"].get<int64_t>() > 4 * fresh["free_space_fragments"].get<int64_t>());
  CHECK(left_behind(work.path()).empty());
}

TEST_CASE("age replay=TRACE,rounds=5,keep=3 keeps the last three generations of a recorded rsync",
          "[age]") {
  if (!can_record() || !require_root("age")) return;
  temp_dir work("/dev/shm");
  const auto j = aged(work, "ext4:size=1G",
                      fmt::format("replay={}/traces/seed000-rsync.trace,rounds=5,keep=3,seed=2", SOURCE_DIR),
                      "r");
  // a generation: the trace's initial tree (2,241 files: the seed tree at 0.02 and what rsync
  // read of the system) and rsync's copy of the seed tree (2,222 files)
  constexpr uint64_t generation = 2241 + 2222;
  CHECK(j["written"] == 5 * generation);
  CHECK(j["deleted"] == 2 * generation);
  CHECK(j["files"] == 3 * generation);
  CHECK(j["full_early"] == false);
  const std::string mnt = work / "mnt";
  REQUIRE(run(fmt::format("mkdir {0} && mount -o loop,ro {1} {0} && ls {0}/.fsrr-aged >{2}; umount {0}",
                          mnt, work / "r.img", work / "gens")) == 0);
  CHECK(slurp(work / "gens") == "gen-0003\ngen-0004\ngen-0005\n");
  CHECK(left_behind(work.path()).empty());
}

TEST_CASE("age refuses what it cannot make, in one line, and leaves no image behind", "[age]") {
  if (!can_record() || !require_root("age")) return;
  temp_dir work("/dev/shm");
  const auto refused = [&](const std::string& args) {
    const int status = run(fmt::format("{} age {} >{} 2>&1", FSRR_BIN, args, work / "log"));
    const std::string out = slurp(work / "log");
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
    return status != 0 ? out : std::string();
  };
  CHECK(refused(fmt::format("tmpfs {} --age fill=50", work / "t.img")) ==
        fmt::format("fsrr: tmpfs: age makes one image of a block file system (ext4, xfs, btrfs...)\n"));
  CHECK(refused(fmt::format("ext4 {} --age fill=50,churn=x", work / "t.img")) ==
        "fsrr: --age fill=50,churn=x: churn=N takes 0 to 100 rounds\n");
  CHECK(run("test -e " + work / "t.img") != 0);
  REQUIRE(run("touch " + work / "exists.img") == 0);
  CHECK(refused(fmt::format("ext4 {} --age fill=50", work / "exists.img")).find("exists") !=
        std::string::npos);
  CHECK(::access((work / "exists.img").c_str(), F_OK) == 0);  // and left as it was
}

namespace {

// A row of compare.json by name.
const nlohmann::json& row_named(const nlohmann::json& result, const std::string& name) {
  for (const auto& r : result["fs"])
    if (r["name"] == name) return r;
  FAIL("no row " << name);
  static const nlohmann::json none;
  return none;
}

}  // namespace

TEST_CASE("compare --age none --age PROFILE: what a workload writes lies in more pieces on aged "
          "ext4 and xfs than on fresh ones",
          "[age][compare]") {
  if (!can_record() || !require_root("compare --age")) return;
  temp_dir work("/dev/shm");
  // 2,000 files of 64 KiB to 1 MiB (log-uniform, 676 MB), each written in 256 KiB writes
  {
    std::ofstream py(work / "w.py");
    py << "import os, random, sys\n"
          "r = random.Random(7)\n"
          "os.makedirs(sys.argv[1])\n"
          "buf = b'x' * 262144\n"
          "for i in range(2000):\n"
          "    left = int(65536 * (16 ** r.random()))\n"
          "    with open(f'{sys.argv[1]}/f{i:04}', 'wb') as f:\n"
          "        while left:\n"
          "            n = min(left, 262144); f.write(buf[:n]); left -= n\n";
  }
  REQUIRE(run(fmt::format("cd {0} && {1} record -o w.trace -- python3 w.py {0}/out >rec.log 2>&1 "
                          "&& rm -rf out",
                          work.path(), FSRR_BIN)) == 0);
  const std::string profile = "fill=50,churn=1,sizes=maildir,seed=1";
  const int status = run(fmt::format(
      "{} compare {} --fs ext4:size=2G --fs xfs:size=2G --age none --age {} --runs 1 --images {} "
      "-o {} >{} 2>{}",
      FSRR_BIN, work / "w.trace", profile, work / "images", work / "out", work / "table.txt",
      work / "log.txt"));
  INFO(slurp(work / "log.txt") << slurp(work / "table.txt"));
  REQUIRE(status == 0);
  const auto result = nlohmann::json::parse(slurp(work / "out/compare.json"));
  REQUIRE(result["fs"].size() == 4);
  CHECK(result["age"] == nlohmann::json::array({"none", profile}));
  CHECK(result["cost_ns"]["age"].get<uint64_t>() > 0);
  for (const char* fs : {"ext4:size=2G", "xfs:size=2G"}) {
    INFO(fs);
    const auto& fresh = row_named(result, fmt::format("{} (fresh)", fs));
    const auto& aged = row_named(result, fmt::format("{} ({})", fs, profile));
    for (const auto* r : {&fresh, &aged}) {
      CHECK((*r)["verify"] == true);
      CHECK((*r)["mismatches"] == 0);
      // the workload's 2,000 files and w.py beside them (prepared there), not the aging's
      CHECK((*r)["layout"]["files"] == 2001);
    }
    CHECK(fresh["age"] == "none");
    CHECK(!fresh.contains("aged"));
    CHECK(aged["age"] == profile);
    CHECK(aged["aged"]["cached"] == false);
    CHECK(aged["aged"]["fill"].get<double>() == Approx(0.50).margin(0.02));
    // fresh: every file in one piece; aged: the holes pruning left split them
    CHECK(fresh["layout"]["score"].get<double>() > 0.995);
    CHECK(aged["layout"]["score"].get<double>() < fresh["layout"]["score"].get<double>() - 0.01);
    CHECK(aged["layout"]["extents_per_file"].get<double>() >
          fresh["layout"]["extents_per_file"].get<double>());
    CHECK(aged["free_space_fragments"].get<int64_t>() >
          10 * fresh["free_space_fragments"].get<int64_t>());
  }
  const std::string table = slurp(work / "table.txt");
  CHECK(table.find("layout") != std::string::npos);
  CHECK(table.find("xfs:size=2G (" + profile + ")") != std::string::npos);
  // what stays: the cache's two images, their records and locks, nothing mounted
  CHECK(left_behind(work.path()).empty());
  CHECK(run(fmt::format("cd {} && test $(ls *.img | wc -l) = 2 && test $(ls *.json | wc -l) = 2 "
                        "&& test $(ls | wc -l) = 6",
                        work / "images/aged")) == 0);
}

TEST_CASE("compare --age: the aged image is made once, found in the cache the next time, made "
          "anew when the profile changes, and not kept with --age-cache off",
          "[age][compare]") {
  if (!can_record() || !require_root("compare --age")) return;
  temp_dir work("/dev/shm");
  REQUIRE(run(fmt::format("cd {} && mkdir src && head -c 3000000 /dev/urandom >src/f && {} record "
                          "-o t.trace -- cp -a src dst >rec.log 2>&1",
                          work.path(), FSRR_BIN)) == 0);
  const auto compare = [&](const std::string& profile, const std::string& cache,
                           const std::string& name) {
    const int status = run(fmt::format(
        "{} compare {} --fs ext4:size=1G --age {} --age-cache {} --runs 2 --images {} -o {} "
        ">/dev/null 2>{}",
        FSRR_BIN, work / "t.trace", profile, cache, work / "images", work / name,
        work / (name + ".log")));
    INFO(slurp(work / (name + ".log")));
    REQUIRE(status == 0);
    return nlohmann::json::parse(slurp(work / (name + "/compare.json")));
  };
  const std::string cache = work / "cache";
  const auto first = compare("fill=40,sizes=mixed,seed=1", cache, "a");
  CHECK(first["fs"][0]["name"] == "ext4:size=1G (fill=40,sizes=mixed,seed=1)");
  CHECK(first["fs"][0]["aged"]["cached"] == false);
  CHECK(first["fs"][0]["verify"] == true);
  CHECK(first["cost_ns"]["age"].get<uint64_t>() > 0);
  // the cached image as it was made: the runs replay on copies of it
  const std::string image = first["fs"][0]["aged"]["image"];
  const auto stamp = [&] {
    REQUIRE(run(fmt::format("stat -c '%s %y' {} >{}", image, work / "stamp")) == 0);
    return slurp(work / "stamp");
  };
  const std::string made = stamp();
  const auto second = compare("fill=40,sizes=mixed,seed=1", cache, "b");
  CHECK(stamp() == made);
  CHECK(second["fs"][0]["aged"]["cached"] == true);
  CHECK(second["fs"][0]["aged"]["files"] == first["fs"][0]["aged"]["files"]);
  CHECK(second["fs"][0]["aged"]["image"] == first["fs"][0]["aged"]["image"]);
  CHECK(second["cost_ns"]["age"] == 0);
  CHECK(second["fs"][0]["verify"] == true);  // both runs on copies: the cached one untouched
  CHECK(slurp(work / "b.log").find("from the cache") != std::string::npos);
  const auto other = compare("fill=40,sizes=mixed,seed=2", cache, "c");
  CHECK(other["fs"][0]["aged"]["cached"] == false);
  CHECK(other["fs"][0]["aged"]["image"] != first["fs"][0]["aged"]["image"]);
  CHECK(run(fmt::format("test $(ls {}/*.img | wc -l) = 2", cache)) == 0);
  // off: aged anew, and nothing kept
  const auto off = compare("fill=40,sizes=mixed,seed=1", "off", "d");
  CHECK(off["fs"][0]["aged"]["cached"] == false);
  CHECK(off["age_cache"] == "off");
  CHECK(run(fmt::format("test ! -e {0} || test -z \"$(ls -A {0})\"", work / "images")) == 0);
  // refused in one line before anything is made: no room left for the workload, no image
  const int refused = run(fmt::format(
      "{} compare {} --fs tmpfs --age fill=40 --images {} -o {} >{} 2>&1; echo $? >>{}", FSRR_BIN,
      work / "t.trace", work / "images2", work / "e", work / "e.log", work / "e.log"));
  CHECK(refused == 0);
  CHECK(slurp(work / "e.log") ==
        "fsrr: --fs tmpfs: --age ages an image of one block file system (ext4, xfs, btrfs...); "
        "compare it with --age none alone\n1\n");
  const auto refused_with = [&](const std::string& args) {
    run(fmt::format("{} compare {} {} --images {} -o {} >{} 2>&1", FSRR_BIN, work / "t.trace",
                    args, work / "images2", work / "e", work / "e.log"));
    return slurp(work / "e.log");
  };
  // 1 GiB aged to 95% leaves 51 MiB; the workload needs what it reads and writes and 128 MiB
  const std::string no_room = refused_with("--fs ext4:size=1G --age fill=95");
  CHECK_THAT(no_room, Catch::StartsWith("fsrr: --fs ext4:size=1G aged to 95% of its 1.0 GiB "
                                        "leaves 51 MiB, and this workload needs about 1") &&
                          Catch::EndsWith(" MiB there: give it a size (e.g. ext4:size=3G)\n"));
  CHECK(refused_with("--fs ext4 --age fill=40 --age none --age fill=40") ==
        "fsrr: --age fill=40 is given twice\n");
  CHECK(refused_with("--fs ext4 --age fill=95,churn=1") ==
        "fsrr: --age fill=95,churn=1: churn needs room above the fill: fill=PCT up to 90 with "
        "churn\n");
  CHECK(run("test -e " + work / "images2") != 0);
  CHECK(left_behind(work.path()).empty());
}
