// Two recordings made at the same time, as two hosts on one shared directory would make them,
// merged into one trace that replays and verifies.
#include <sys/stat.h>

#include <string>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

nlohmann::json json_of(const std::string& command, const std::string& scratch) {
  REQUIRE(run(fmt::format("{} >{} 2>&1", command, scratch)) == 0);
  return nlohmann::json::parse(slurp(scratch));
}

// Host a: three writers append 20 lines each to shared/log, then a makes shared/from-a and
// says it is done. Host b: waits for that, then three writers of its own append to the same
// log, and b renames the file a made.
struct two_hosts {
  temp_dir work{"/dev/shm"};
  std::string shared = work / "shared";
  std::string a = work / "a.trace", b = work / "b.trace", ab = work / "ab.trace";
  two_hosts() {
    REQUIRE(run(fmt::format("mkdir -p {0} && : >{0}/log", shared)) == 0);
    const std::string host_a = fmt::format(
        "for i in 1 2 3; do (for k in $(seq 20); do echo \"a$i $k\" >>{0}/log; done) & done; "
        "wait; echo hello >{0}/from-a; : >{0}/a-done",
        shared);
    const std::string host_b = fmt::format(
        "while [ ! -e {0}/a-done ]; do sleep 0.01; done; "
        "for i in 1 2 3; do (for k in $(seq 20); do echo \"b$i $k\" >>{0}/log; done) & done; "
        "wait; mv {0}/from-a {0}/renamed-by-b",
        shared);
    // both at once, each recorder following its own command only
    REQUIRE(run(fmt::format("({0} record -o {1} -- sh -c '{2}' >{3} 2>&1 &"
                            " {0} record -o {4} -- sh -c '{5}' >{6} 2>&1; wait)",
                            FSRR_BIN, a, host_a, work / "a.log", b, host_b, work / "b.log")) == 0);
    INFO(slurp(work / "a.log") + slurp(work / "b.log"));
    REQUIRE(run(fmt::format("{} merge {} {} -o {} >{} 2>&1", FSRR_BIN, a, b, ab,
                            work / "merge.log")) == 0);
  }
  static two_hosts& get() {
    static two_hosts h;
    return h;
  }
};

}  // namespace

TEST_CASE("two recordings at once on one shared directory merge, replay with 0 mismatches and "
          "verify",
          "[merge]") {
  if (!can_record()) return;
  auto& h = two_hosts::get();
  INFO(slurp(h.work / "merge.log"));
  const auto ia = json_of(fmt::format("{} info {} --json", FSRR_BIN, h.a), h.work / "ia.json");
  const auto ib = json_of(fmt::format("{} info {} --json", FSRR_BIN, h.b), h.work / "ib.json");
  const auto m = json_of(fmt::format("{} info {} --json", FSRR_BIN, h.ab), h.work / "m.json");
  REQUIRE(m["hosts"].size() == 2);
  CHECK(m["hosts"][0]["trace_id"] == ia["trace_id"]);
  CHECK(m["hosts"][1]["trace_id"] == ib["trace_id"]);
  CHECK(m["hosts"][0]["offset_ns"].get<uint64_t>() + m["hosts"][1]["offset_ns"].get<uint64_t>() >
        0);  // one of them started first
  CHECK(m["events"] == ia["events"].get<uint64_t>() + ib["events"].get<uint64_t>());
  CHECK(m["processes"] == ia["processes"].get<uint64_t>() + ib["processes"].get<uint64_t>());
  CHECK(m["bytes_written"] ==
        ia["bytes_written"].get<uint64_t>() + ib["bytes_written"].get<uint64_t>());
  CHECK(m["lost_events"] == 0);
  CHECK(m["derived"] == "merge of 2 traces");

  temp_dir target("/dev/shm");
  const std::string report = h.work / "report.json";
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{}.out 2>&1",
                          FSRR_BIN, h.ab, target.path(), report, report)) == 0);
  INFO(slurp(report + ".out"));
  const auto rep = nlohmann::json::parse(slurp(report));
  CHECK(rep["mismatches"] == 0);
  CHECK(run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, h.ab, target.path(),
                        h.work / "verify.out")) == 0);
  INFO(slurp(h.work / "verify.out"));
  // 120 appended lines of both hosts in one log; b renamed what a made
  const std::string replayed = target.path() + h.shared;
  struct stat log {}, real {}, renamed {}, gone {};
  REQUIRE(::stat((replayed + "/log").c_str(), &log) == 0);
  REQUIRE(::stat((h.shared + "/log").c_str(), &real) == 0);
  CHECK(real.st_size == 6 * (9 * 5 + 11 * 6));  // "a1 7\n": 5 bytes while k < 10, 6 after
  CHECK(log.st_size == real.st_size);
  REQUIRE(::stat((replayed + "/renamed-by-b").c_str(), &renamed) == 0);
  CHECK(renamed.st_size == 6);
  CHECK(::stat((replayed + "/from-a").c_str(), &gone) != 0);
}

TEST_CASE("merge refuses a trace with itself, and fewer than two traces", "[merge]") {
  if (!can_record()) return;
  auto& h = two_hosts::get();
  const std::string out = h.work / "aa.trace", err = h.work / "aa.err";
  CHECK(run(fmt::format("{} merge {} {} -o {} 2>{}", FSRR_BIN, h.a, h.a, out, err)) == 1);
  CHECK(slurp(err) == fmt::format("fsrr: {0} and {0} are the same file: a trace merges once\n", h.a));
  const std::string copy = h.work / "a-copy.trace";
  REQUIRE(run(fmt::format("cp {} {}", h.a, copy)) == 0);
  CHECK(run(fmt::format("{} merge {} {} -o {} 2>{}", FSRR_BIN, h.a, copy, out, err)) == 1);
  CHECK(slurp(err).find(fmt::format("fsrr: {} and {} hold the same recording (trace id ", h.a,
                                    copy)) == 0);
  CHECK(run(fmt::format("{} merge {} -o {} 2>{}", FSRR_BIN, h.a, out, err)) == 2);
  CHECK(slurp(err) == "fsrr: merge needs two traces or more\n");
  struct stat st {};
  CHECK(::stat(out.c_str(), &st) != 0);
  // the output is never an input, and an earlier output stays without --force
  CHECK(run(fmt::format("{} merge {} {} -o {} 2>{}", FSRR_BIN, h.a, h.b, h.a, err)) == 1);
  CHECK(slurp(err) == fmt::format("fsrr: {} is the input trace itself: refusing to write over it\n",
                                  h.a));
  CHECK(run(fmt::format("{} merge {} {} -o {} 2>{}", FSRR_BIN, h.a, h.b, h.ab, err)) == 1);
  CHECK(slurp(err) ==
        fmt::format("fsrr: {} exists; choose another name or remove it\n", h.ab));
}
