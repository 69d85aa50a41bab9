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

// Two hosts' recordings of one shared directory, merged (e2e.h), once for the tests here.
struct recorded_merge {
  temp_dir work{"/dev/shm"};
  two_hosts h = record_two_hosts(work.path(), FSRR_BIN);
  static recorded_merge& get() {
    static recorded_merge r;
    return r;
  }
};

}  // namespace

TEST_CASE("two recordings at once on one shared directory merge, replay with 0 mismatches and "
          "verify",
          "[merge]") {
  if (!can_record()) return;
  auto& rec = recorded_merge::get();
  const two_hosts& h = rec.h;
  INFO(slurp(h.merge_log));
  const auto ia = json_of(fmt::format("{} info {} --json", FSRR_BIN, h.a), rec.work / "ia.json");
  const auto ib = json_of(fmt::format("{} info {} --json", FSRR_BIN, h.b), rec.work / "ib.json");
  const auto m = json_of(fmt::format("{} info {} --json", FSRR_BIN, h.merged), rec.work / "m.json");
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
  // shared/log, from-a (b renames what a made: a shared file system's files) and local/log
  // are in both traces' trees or creates, and a-done when b's recorder started after a made
  // it (then b found it there; else b only stats it); the merge says so, as a hosts' own /tmp
  // would be one file too without --shared
  REQUIRE(run(fmt::format("{} dump --tree {} >{}", FSRR_BIN, h.b, rec.work / "b-tree.txt")) == 0);
  const std::string b_tree = slurp(rec.work / "b-tree.txt");
  const bool b_found_done =
      b_tree.find("\"tree\":\"" + h.shared + "/a-done\"") != std::string::npos;
  const int united = b_found_done ? 4 : 3;
  INFO(b_tree.substr(0, 4000));
  CHECK(m["derived"] == fmt::format("merge of 2 traces; {} files outside the system directories "
                                    "united across hosts",
                                    united));
  CHECK(slurp(h.merge_log).find(fmt::format("\n  {} files outside the system directories "
                                            "(/usr, /etc...) named by several traces are one "
                                            "file for all hosts",
                                            united)) != std::string::npos);
  // each host's name is its own (both recorded on this machine: NAME and NAME#2), and dump
  // names a thread HOST:TID, as tids repeat across hosts
  const std::string a_name = m["hosts"][0]["hostname"], b_name = m["hosts"][1]["hostname"];
  CHECK(b_name == a_name + "#2");
  REQUIRE(run(fmt::format("{} dump {} >{}", FSRR_BIN, h.merged, rec.work / "dump.txt")) == 0);
  const std::string dump = slurp(rec.work / "dump.txt");
  CHECK(dump.find(" [" + a_name + ":") != std::string::npos);
  CHECK(dump.find(" [" + b_name + ":") != std::string::npos);

  temp_dir target("/dev/shm");
  const std::string report = rec.work / "report.json";
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{}.out 2>&1",
                          FSRR_BIN, h.merged, target.path(), report, report)) == 0);
  INFO(slurp(report + ".out"));
  const auto rep = nlohmann::json::parse(slurp(report));
  CHECK(rep["mismatches"] == 0);
  CHECK(run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, h.merged, target.path(),
                        rec.work / "verify.out")) == 0);
  INFO(slurp(rec.work / "verify.out"));
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

TEST_CASE("merge --shared: the shared directory's files are one, every other path each host's "
          "own beneath TARGET/hosts/NAME, replayed with 0 mismatches and verified",
          "[merge]") {
  if (!can_record()) return;
  auto& rec = recorded_merge::get();
  const two_hosts& h = rec.h;
  const std::string merged = rec.work / "shared.trace", log = rec.work / "shared.log";
  REQUIRE(run(fmt::format("{} merge {} {} --shared {} -o {} >{} 2>&1", FSRR_BIN, h.a, h.b,
                          h.shared, merged, log)) == 0);
  INFO(slurp(log));
  const auto m = json_of(fmt::format("{} info {} --json", FSRR_BIN, merged), rec.work / "s.json");
  const std::string a_name = m["hosts"][0]["hostname"], b_name = m["hosts"][1]["hostname"];
  CHECK(m["derived"] == fmt::format("merge of 2 traces; shared: {}; each host's other paths its "
                                    "own",
                                    h.shared));
  CHECK(slurp(log).find(fmt::format("replay beneath TARGET/hosts/{}, hosts/{}\n", a_name,
                                    b_name)) != std::string::npos);
  REQUIRE(m["roots"].size() == 3);
  CHECK(m["roots"][1]["where"] == "host:" + a_name);
  CHECK(m["roots"][1]["placed_at"] == "hosts/" + a_name);
  CHECK(m["roots"][2]["placed_at"] == "hosts/" + b_name);

  temp_dir target("/dev/shm");
  const std::string report = rec.work / "shared-report.json";
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{}.out 2>&1",
                          FSRR_BIN, merged, target.path(), report, report)) == 0);
  INFO(slurp(report + ".out"));
  CHECK(nlohmann::json::parse(slurp(report))["mismatches"] == 0);
  CHECK(run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, merged, target.path(),
                        rec.work / "shared-verify.out")) == 0);
  INFO(slurp(rec.work / "shared-verify.out"));
  // one shared log of both hosts' 120 lines; two local logs: a's "a\n" and, since b found
  // a's file on this one machine, b's own "a\nb\n"
  struct stat shared_log {}, a_log {}, b_log {}, renamed {};
  REQUIRE(::stat((target.path() + "/root1" + h.shared + "/log").c_str(), &shared_log) == 0);
  CHECK(shared_log.st_size == 6 * (9 * 5 + 11 * 6));
  REQUIRE(::stat((target.path() + "/hosts/" + a_name + h.local + "/log").c_str(), &a_log) == 0);
  CHECK(a_log.st_size == 2);
  REQUIRE(::stat((target.path() + "/hosts/" + b_name + h.local + "/log").c_str(), &b_log) == 0);
  CHECK(b_log.st_size == 4);
  CHECK(::stat((target.path() + "/root1" + h.local).c_str(), &renamed) != 0);
  REQUIRE(::stat((target.path() + "/root1" + h.shared + "/renamed-by-b").c_str(), &renamed) == 0);
  CHECK(renamed.st_size == 6);

  // --map moves a host's own paths by its directory's name
  temp_dir mapped("/dev/shm"), elsewhere("/dev/shm");
  REQUIRE(run(fmt::format("{} replay {} {} --map /hosts/{}={} --timing afap --no-progress >{} "
                          "2>&1 && {} verify {} {} --map /hosts/{}={} >>{} 2>&1",
                          FSRR_BIN, merged, mapped.path(), a_name, elsewhere.path(),
                          rec.work / "mapped.out", FSRR_BIN, merged, mapped.path(), a_name,
                          elsewhere.path(), rec.work / "mapped.out")) == 0);
  INFO(slurp(rec.work / "mapped.out"));
  CHECK(::stat((elsewhere.path() + h.local + "/log").c_str(), &a_log) == 0);
  CHECK(::stat((mapped.path() + "/hosts/" + a_name).c_str(), &a_log) != 0);

  // refused in one line, nothing written: a prefix that is not one, a merged input
  const std::string err = rec.work / "shared.err", out = rec.work / "never.trace";
  CHECK(run(fmt::format("{} merge {} {} --shared / -o {} 2>{}", FSRR_BIN, h.a, h.b, out, err)) == 1);
  CHECK(slurp(err) == "fsrr: merge --shared '/': expected the absolute path of a directory other "
                      "than /, of plain names (e.g. /mnt/lustre)\n");
  CHECK(run(fmt::format("{} merge {} {} --shared {} -o {} 2>{}", FSRR_BIN, h.merged, h.b,
                        h.shared, out, err)) == 1);
  CHECK(slurp(err).find("is a merge of 2 hosts already") != std::string::npos);
  struct stat none {};
  CHECK(::stat(out.c_str(), &none) != 0);
}

TEST_CASE("merge refuses a trace with itself, and fewer than two traces", "[merge]") {
  if (!can_record()) return;
  auto& rec = recorded_merge::get();
  const two_hosts& h = rec.h;
  const std::string out = rec.work / "aa.trace", err = rec.work / "aa.err";
  CHECK(run(fmt::format("{} merge {} {} -o {} 2>{}", FSRR_BIN, h.a, h.a, out, err)) == 1);
  CHECK(slurp(err) == fmt::format("fsrr: {0} and {0} are the same file: a trace merges once\n", h.a));
  const std::string copy = rec.work / "a-copy.trace";
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
  CHECK(run(fmt::format("{} merge {} {} -o {} 2>{}", FSRR_BIN, h.a, h.b, h.merged, err)) == 1);
  CHECK(slurp(err) ==
        fmt::format("fsrr: {} exists; choose another name or remove it\n", h.merged));
}
