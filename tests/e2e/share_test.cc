// Sharing traces: anonymize, as a user would run it on a recording of their own files.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

// Names nobody else would use: none may survive anonymize anywhere in the file.
const std::vector<std::string> secrets = {
    "Zanzibar-payroll", "confidential_2026", "merger-plans.docx", "phoenix-notes",
    "project.phoenix",  "Bartholomew",       "salaries.xlsx",     "quarterly"};

struct recorded_secrets {
  temp_dir work{"/dev/shm"};
  std::string trace = work / "secret.trace";
  recorded_secrets() {
    const std::string d = work / "Zanzibar-payroll";
    REQUIRE(run(fmt::format("mkdir -p {0}/confidential_2026/quarterly && "
                            "head -c 7000 /dev/urandom >{0}/confidential_2026/merger-plans.docx && "
                            "head -c 300 /dev/urandom >{0}/confidential_2026/quarterly/salaries.xlsx && "
                            "ln -s confidential_2026/quarterly/salaries.xlsx {0}/phoenix-notes",
                            d)) == 0);
    REQUIRE(::setxattr((d + "/confidential_2026/merger-plans.docx").c_str(), "user.project.phoenix",
                       "Bartholomew", 11, 0) == 0);
    // a telling command line: the backup's own names
    REQUIRE(run(fmt::format("cd {} && {} record -o {} -- cp -a Zanzibar-payroll Bartholomew "
                            ">{} 2>&1",
                            work.path(), FSRR_BIN, trace, work / "record.log")) == 0);
  }
  static recorded_secrets& get() {
    static recorded_secrets r;
    return r;
  }
};

int anonymize(const std::string& in, const std::string& out, const std::string& key,
              const std::string& log) {
  return run(fmt::format("{} anonymize {} -o {} {} >{} 2>&1", FSRR_BIN, in, out,
                         key.empty() ? "" : "--key-file " + key, log));
}

std::string bytes_of(const std::string& path) { return slurp(path); }

nlohmann::json info_of(const std::string& trace, const std::string& scratch) {
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, trace, scratch)) == 0);
  return nlohmann::json::parse(slurp(scratch));
}

}  // namespace

TEST_CASE("anonymize leaves none of the names anywhere in the file, and the trace replays",
          "[share][anonymize]") {
  if (!can_record()) return;
  auto& rec = recorded_secrets::get();
  INFO(slurp(rec.work / "record.log"));
  const std::string key = rec.work / "key", out = rec.work / "anon.trace";
  REQUIRE(run(fmt::format("echo 'correct horse battery staple' >{}", key)) == 0);
  REQUIRE(anonymize(rec.trace, out, key, rec.work / "anon.log") == 0);
  INFO(slurp(rec.work / "anon.log"));
  // the names are in the original (else this test would prove nothing) ...
  REQUIRE(run(fmt::format("zstd -dcq {} >{}", rec.trace, rec.work / "orig.raw")) == 0);
  const std::string orig = bytes_of(rec.trace) + bytes_of(rec.work / "orig.raw");
  for (const auto& s : secrets) CHECK(orig.find(s) != std::string::npos);
  // ... and nowhere in the output: not in its raw bytes (header and footer frames are stored
  // uncompressed), not in any decompressed frame
  REQUIRE(run(fmt::format("zstd -dcq {} >{}", out, rec.work / "anon.raw")) == 0);
  const std::string anon = bytes_of(out), decompressed = bytes_of(rec.work / "anon.raw");
  for (const auto& s : secrets) {
    INFO(s);
    CHECK(anon.find(s) == std::string::npos);
    CHECK(decompressed.find(s) == std::string::npos);
  }
  const auto a = info_of(out, rec.work / "a.json"), o = info_of(rec.trace, rec.work / "o.json");
  CHECK(a["anonymized"] == true);
  CHECK(a["key_id"].get<std::string>().size() == 16);
  CHECK(a["derived"] == "anonymize");
  CHECK(o["anonymized"] == false);
  // the recording's id goes along: random, it tells nothing, and names where the trace came from
  CHECK(o["trace_id"].get<std::string>().size() == 32);
  CHECK(a["trace_id"] == o["trace_id"]);
  // the shape is kept: every op, every byte, every file of the tree
  CHECK(a["ops"] == o["ops"]);
  CHECK(a["events"] == o["events"]);
  CHECK(a["bytes_read"] == o["bytes_read"]);
  CHECK(a["bytes_written"] == o["bytes_written"]);
  CHECK(a["tree"] == o["tree"]);
  CHECK(a["command"].size() == o["command"].size());

  // it replays as the original did, and verifies (the symlink still resolves: cp copies
  // the link, and verify checks its target)
  temp_dir target("/dev/shm");
  const std::string report = rec.work / "anon-report.json";
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{}.out 2>&1",
                          FSRR_BIN, out, target.path(), report, report)) == 0);
  INFO(slurp(report + ".out"));
  const auto rep = nlohmann::json::parse(slurp(report));
  CHECK(rep["mismatches"] == 0);
  CHECK(run(fmt::format("{} verify {} {} >{} 2>&1", FSRR_BIN, out, target.path(),
                        rec.work / "anon.verify")) == 0);
  INFO(slurp(rec.work / "anon.verify"));
  // the user xattr came out under its digest, with the value's size
  CHECK(run(fmt::format("find {} -type f -exec getfattr -d -m user. {{}} + 2>/dev/null | "
                        "grep -c '^user\\.' | grep -qx 2",
                        target.path())) == 0);
}

TEST_CASE("one key maps names the same way every time, another key another way",
          "[share][anonymize]") {
  if (!can_record()) return;
  auto& rec = recorded_secrets::get();
  const std::string k1 = rec.work / "k1", k2 = rec.work / "k2";
  REQUIRE(run(fmt::format("echo one >{} && echo two >{}", k1, k2)) == 0);
  REQUIRE(anonymize(rec.trace, rec.work / "x1.trace", k1, rec.work / "x1.log") == 0);
  REQUIRE(anonymize(rec.trace, rec.work / "x2.trace", k1, rec.work / "x2.log") == 0);
  REQUIRE(anonymize(rec.trace, rec.work / "y.trace", k2, rec.work / "y.log") == 0);
  REQUIRE(anonymize(rec.trace, rec.work / "r.trace", "", rec.work / "r.log") == 0);
  CHECK(bytes_of(rec.work / "x1.trace") == bytes_of(rec.work / "x2.trace"));
  CHECK(bytes_of(rec.work / "x1.trace") != bytes_of(rec.work / "y.trace"));
  const auto dump = [&](const std::string& t) {
    REQUIRE(run(fmt::format("{} dump {} >{}.txt", FSRR_BIN, t, t)) == 0);
    return slurp(t + ".txt");
  };
  const std::string x = dump(rec.work / "x1.trace"), y = dump(rec.work / "y.trace");
  // the same events, other names: the lines differ, their count does not
  CHECK(x != y);
  CHECK(std::count(x.begin(), x.end(), '\n') == std::count(y.begin(), y.end(), '\n'));
  // a random key each time: the key ids differ
  const auto ix = info_of(rec.work / "x1.trace", rec.work / "ix.json");
  const auto ir = info_of(rec.work / "r.trace", rec.work / "ir.json");
  CHECK(ix["key_id"] != ir["key_id"]);
}

TEST_CASE("anonymize refuses to write over its input, or over an earlier output without --force",
          "[share][anonymize]") {
  if (!can_record()) return;
  auto& rec = recorded_secrets::get();
  const std::string log = rec.work / "refuse.log";
  CHECK(anonymize(rec.trace, rec.trace, "", log) == 1);
  CHECK(slurp(log).find("refusing to write over it") != std::string::npos);
  REQUIRE(anonymize(rec.trace, rec.work / "once.trace", "", log) == 0);
  CHECK(anonymize(rec.trace, rec.work / "once.trace", "", log) == 1);
  CHECK(run(fmt::format("{} anonymize {} -o {} --force >{} 2>&1", FSRR_BIN, rec.trace,
                        rec.work / "once.trace", log)) == 0);
  CHECK(run(fmt::format("{} anonymize {} -o {} --keep relative >{} 2>&1", FSRR_BIN, rec.trace,
                        rec.work / "k.trace", log)) == 1);
}

namespace {

// A recorded rsync of a few hundred files of assorted sizes, a directory and a symlink.
struct recorded_rsync_copy {
  temp_dir work{"/dev/shm"};
  std::string trace = work / "rsync.trace";
  std::vector<nlohmann::json> events;
  recorded_rsync_copy() {
    REQUIRE(run(fmt::format("mkdir -p {0}/src/sub && for i in $(seq 1 300); do "
                            "head -c $((i * 37)) /dev/urandom >{0}/src/f$i; done && "
                            "for i in 1 2 3; do head -c 300000 /dev/urandom >{0}/src/sub/big$i; "
                            "done && ln -s f1 {0}/src/link",
                            work.path())) == 0);
    REQUIRE(run(fmt::format("cd {} && {} record -o {} -- rsync -aAHX src/ dst >{} 2>&1",
                            work.path(), FSRR_BIN, trace, work / "record.log")) == 0);
    REQUIRE(run(fmt::format("{} dump {} --json >{}", FSRR_BIN, trace, work / "dump.jsonl")) == 0);
    std::ifstream in(work / "dump.jsonl");
    for (std::string line; std::getline(in, line);) events.push_back(nlohmann::json::parse(line));
    REQUIRE(events.size() > 1000);
  }
  static recorded_rsync_copy& get() {
    static recorded_rsync_copy r;
    return r;
  }
};

// Replays `trace` alone into a fresh target: the report, after checking it verifies.
nlohmann::json replays_alone(const std::string& trace, const temp_dir& work, const std::string& tag) {
  temp_dir target("/dev/shm");
  const std::string report = work / (tag + ".json");
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >{}.out 2>&1",
                          FSRR_BIN, trace, target.path(), report, report)) == 0);
  INFO(tag << ": " << slurp(report + ".out"));
  const auto r = nlohmann::json::parse(slurp(report));
  CHECK(r["mismatches"] == 0);
  CHECK(run(fmt::format("{} verify {} {} >{}.verify 2>&1", FSRR_BIN, trace, target.path(), report)) == 0);
  INFO(slurp(report + ".verify"));
  return r;
}

int slice(const std::string& in, const std::string& out, const std::string& options,
          const std::string& log) {
  return run(fmt::format("{} slice {} -o {} {} >{} 2>&1", FSRR_BIN, in, out, options, log));
}

}  // namespace

TEST_CASE("a recorded rsync sliced at its middle: each half replays on its own and verifies",
          "[share][slice]") {
  if (!can_record()) return;
  auto& rec = recorded_rsync_copy::get();
  const uint64_t mid = rec.events[rec.events.size() / 2]["ts"].get<uint64_t>();
  const std::string at = fmt::format("{:.9f}", static_cast<double>(mid) / 1e9);
  REQUIRE(slice(rec.trace, rec.work / "first.trace", "--to " + at, rec.work / "s1.log") == 0);
  REQUIRE(slice(rec.trace, rec.work / "second.trace", "--from " + at, rec.work / "s2.log") == 0);
  INFO(slurp(rec.work / "s1.log") << slurp(rec.work / "s2.log"));
  const auto first = replays_alone(rec.work / "first.trace", rec.work, "first");
  const auto second = replays_alone(rec.work / "second.trace", rec.work, "second");
  // between them, every op of the recording, once (the second half's fd_binds are its own)
  const auto info = [&](const std::string& t) {
    REQUIRE(run(fmt::format("{} info {} --json >{}.info", FSRR_BIN, t, t)) == 0);
    return nlohmann::json::parse(slurp(t + ".info"));
  };
  const auto whole = info(rec.trace), a = info(rec.work / "first.trace"),
             b = info(rec.work / "second.trace");
  for (const auto& [op, n] : whole["ops"].items()) {
    INFO(op);
    const uint64_t in_a = a["ops"].value(op, 0), in_b = b["ops"].value(op, 0);
    if (op == "fd_bind")
      CHECK(in_a + in_b >= n.get<uint64_t>());
    else
      CHECK(in_a + in_b == n.get<uint64_t>());
  }
  CHECK(b["ops"].value("fd_bind", 0) > 0);  // rsync held files open across the cut
  CHECK(b["derived"].get<std::string>().rfind("slice --from ", 0) == 0);
  CHECK(a["trace_id"] == whole["trace_id"]);  // parts of one recording: merge refuses them
  CHECK(b["trace_id"] == whole["trace_id"]);
  CHECK(a["tree"]["files"] == whole["tree"]["files"]);
  CHECK(b["tree"]["files"].get<uint64_t>() > a["tree"]["files"].get<uint64_t>());  // copies made
}

TEST_CASE("a slice of one process, or of one directory, brings what it needs of the others",
          "[share][slice]") {
  if (!can_record()) return;
  auto& rec = recorded_rsync_copy::get();
  // rsync's receiver writes the files; the generator made the directories it writes in
  std::map<int, int> writes;
  for (const auto& e : rec.events)
    if (e["op"] == "write" && e.value("path", "").empty()) ++writes[e["pid"].get<int>()];
  int receiver = 0;
  for (const auto& [pid, n] : writes)
    if (!receiver || n > writes[receiver]) receiver = pid;
  REQUIRE(receiver != 0);
  REQUIRE(slice(rec.trace, rec.work / "pid.trace", fmt::format("--pid {}", receiver),
                rec.work / "pid.log") == 0);
  INFO(slurp(rec.work / "pid.log"));
  replays_alone(rec.work / "pid.trace", rec.work, "pid");
  REQUIRE(run(fmt::format("{} dump {} --json >{}", FSRR_BIN, rec.work / "pid.trace",
                          rec.work / "pid.jsonl")) == 0);
  std::set<int> pids;
  size_t mkdirs = 0;
  std::ifstream in(rec.work / "pid.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto e = nlohmann::json::parse(line);
    pids.insert(e["pid"].get<int>());
    mkdirs += e["op"] == "mkdirat" || e["op"] == "mkdir";
  }
  CHECK(pids.count(receiver) == 1);
  CHECK(mkdirs >= 1);  // dst/sub, made by the generator, came along
  REQUIRE(slice(rec.trace, rec.work / "path.trace", "--path " + rec.work / "dst/sub",
                rec.work / "path.log") == 0);
  INFO(slurp(rec.work / "path.log"));
  const auto r = replays_alone(rec.work / "path.trace", rec.work, "path");
  CHECK(r["bytes_written"] == 900000);  // the three big files, and nothing else
}

TEST_CASE("slice refuses what it cannot cut", "[share][slice]") {
  if (!can_record()) return;
  auto& rec = recorded_rsync_copy::get();
  const std::string log = rec.work / "bad.log";
  CHECK(slice(rec.trace, rec.work / "x.trace", "--from 2 --to 1", log) == 1);
  CHECK(slurp(log).find("--from must come before --to") != std::string::npos);
  CHECK(slice(rec.trace, rec.work / "x.trace", "--path relative/dir", log) == 1);
  CHECK(slice(rec.trace, rec.trace, "--to 1", log) == 1);
  CHECK(slice(rec.trace, rec.work / "x.trace", "--from -1", log) == 1);
}

namespace {

// A shell workload of a few thousand events, of which a handful make d/found.
struct recorded_shell {
  temp_dir work{"/dev/shm"};
  std::string trace = work / "shell.trace";
  recorded_shell() {
    std::ofstream(work / "w.sh") << "for i in $(seq 1 150); do echo data > f$i; done\n"
                                    "mkdir d\n"
                                    "echo x > d/needle\n"
                                    "mv d/needle d/found\n"
                                    "for i in $(seq 1 150); do read l < f$i; done\n"
                                    "rm f1 f2\n";
    REQUIRE(run(fmt::format("cd {} && {} record -o {} -- sh w.sh >{} 2>&1", work.path(),
                            FSRR_BIN, trace, work / "record.log")) == 0);
  }
  static recorded_shell& get() {
    static recorded_shell r;
    return r;
  }
};

uint64_t events_in(const std::string& trace, const std::string& scratch) {
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, trace, scratch)) == 0);
  return nlohmann::json::parse(slurp(scratch))["events"];
}

}  // namespace

TEST_CASE("minimize finds the few events a predicate needs, each try confined and cleaned up",
          "[share][minimize]") {
  if (!can_record()) return;
  auto& rec = recorded_shell::get();
  temp_dir scratch("/dev/shm");
  const std::string found = rec.work / "d/found", out = rec.work / "min.trace";
  const std::string predicate = fmt::format("sh -c 'test -f \"$FSRR_TARGET\"{}'", found);
  REQUIRE(run(fmt::format("{} minimize {} -o {} --scratch {} --quiet -- {} >{} 2>&1", FSRR_BIN,
                          rec.trace, out, scratch.path(), predicate, rec.work / "min.log")) == 0);
  INFO(slurp(rec.work / "min.log"));
  const uint64_t before = events_in(rec.trace, rec.work / "i1.json");
  const uint64_t after = events_in(out, rec.work / "i2.json");
  CHECK(before > 1000);
  CHECK(after * 20 <= before);  // at most 5%
  CHECK(after >= 3);            // mkdir, the create, the rename at least
  // every try's trace, report and target are gone
  CHECK(run(fmt::format("test -z \"$(ls -A {})\"", scratch.path())) == 0);
  // and the predicate holds on the result, replayed as anyone would
  temp_dir target("/dev/shm");
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress >/dev/null 2>&1", FSRR_BIN,
                          out, target.path())) == 0);
  CHECK(::access((target.path() + found).c_str(), F_OK) == 0);
  CHECK(::access((target.path() + rec.work / "f3").c_str(), F_OK) != 0);  // the rest went
}

TEST_CASE("a predicate can read the replay's report: the errnos of each op are in it",
          "[share][minimize]") {
  if (!can_record()) return;
  auto& rec = recorded_shell::get();
  // interesting: the report counts a renameat2
  const std::string predicate =
      "python3 -c 'import json, os, sys; r = json.load(open(os.environ[\"FSRR_REPORT\"])); "
      "sys.exit(0 if r[\"ops\"].get(\"renameat2\", {}).get(\"count\", 0) >= 1 else 1)'";
  const std::string out = rec.work / "min2.trace";
  REQUIRE(run(fmt::format("{} minimize {} -o {} --quiet -- {} >{} 2>&1", FSRR_BIN, rec.trace, out,
                          predicate, rec.work / "min2.log")) == 0);
  INFO(slurp(rec.work / "min2.log"));
  REQUIRE(run(fmt::format("{} dump {} >{}", FSRR_BIN, out, rec.work / "min2.txt")) == 0);
  const std::string dump = slurp(rec.work / "min2.txt");
  CHECK(dump.find("renameat2(") != std::string::npos);
  CHECK(std::count(dump.begin(), dump.end(), '\n') <= 20);
  // the whole trace's report: each op's failures by errno add up to its errors
  temp_dir target("/dev/shm");
  const std::string report = rec.work / "whole.json";
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >/dev/null 2>&1",
                          FSRR_BIN, rec.trace, target.path(), report)) == 0);
  const auto r = nlohmann::json::parse(slurp(report));
  uint64_t enoent = 0;
  for (const auto& [op, s] : r["ops"].items()) {
    uint64_t sum = 0;
    for (const auto& [name, n] : s["errnos"].items()) sum += n.get<uint64_t>();
    INFO(op);
    CHECK(sum == s["errors"].get<uint64_t>());
    enoent += s["errnos"].value("ENOENT", 0);
  }
  CHECK(enoent > 0);  // the shell looks its commands up along PATH
}

// The bug report of issue 43: a copied tree, then one large file written, which fills a 32 MiB
// ext4. Deleting events alone left 40% of 109k after 1,000 tries; simplifying gets to a few.
TEST_CASE("minimize simplifies a filled disk down to a few writes: a copy then one large file, ENOSPC on ext4",
          "[share][minimize]") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  // the seed tree at 0.05: 5,000 × 1 KiB, 500 × 4 KiB, 50 × 10 KiB, 5 × 1000 KiB
  REQUIRE(run(fmt::format("python3 -c 'import os\nfor n, k, c in ((\"1K\", 1024, 5000), "
                          "(\"4K\", 4096, 500), (\"10K\", 10240, 50), (\"1000K\", 1024000, 5)):\n"
                          " for i in range(c): open(\"{}/src/%s#%05d\" % (n, i), \"wb\").write(os.urandom(k))' ",
                          work.path()).insert(0, fmt::format("mkdir {}/src && ", work.path()))) == 0);
  const std::string trace = work / "t.trace", out = work / "min.trace";
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- sh -c 'cp -a src dst && dd if=/dev/zero "
                          "of=big bs=1M count=40 status=none' >{} 2>&1",
                          work.path(), FSRR_BIN, trace, work / "record.log")) == 0);
  std::ofstream(work / "enospc.sh") << "#!/bin/sh\ngrep -q ENOSPC \"$FSRR_REPORT\"\n";
  REQUIRE(::chmod((work / "enospc.sh").c_str(), 0755) == 0);
  REQUIRE(run(fmt::format("{} minimize {} -o {} --fs ext4:size=32M -- {} >{} 2>{}", FSRR_BIN, trace,
                          out, work / "enospc.sh", work / "min.out", work / "min.log")) == 0);
  const std::string table = slurp(work / "min.out");
  INFO(table);
  CHECK(events_in(trace, work / "i1.json") > 90000);
  CHECK(events_in(out, work / "i2.json") <= 50);
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, out, work / "i3.json")) == 0);
  const auto info = nlohmann::json::parse(slurp(work / "i3.json"));
  const auto& tree = info["tree"];
  CHECK(tree["files"].get<uint64_t>() + tree["dirs"].get<uint64_t>() +
            tree["symlinks"].get<uint64_t>() + tree["other"].get<uint64_t>() <=
        20);
  // a line for each pass that tried something
  CHECK(table.find("\nprocesses ") != std::string::npos);
  CHECK(table.find("\ncoalesce ") != std::string::npos);
  // the result still fills the disk, replayed as anyone would
  loop_fs ext4("ext4", 32);
  // (exit 1: the failed write is a mismatch)
  CHECK(run(fmt::format("{} replay {} {} --timing afap --no-progress --report {} >/dev/null 2>&1",
                        FSRR_BIN, out, ext4.path(), work / "r.json")) == 1);
  const auto report = nlohmann::json::parse(slurp(work / "r.json"));
  CHECK(report["ops"]["write"]["errnos"].value("ENOSPC", 0) >= 1);
}

// Files that only take space: cat reads 100 files, then dd's 20 MiB no longer fit a 32 MiB
// ext4. dd alone fits; dd beside one file as large as the hundred still does not.
TEST_CASE("minimize keeps the space of files it cuts in one file of their size", "[share][minimize]") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  REQUIRE(run(fmt::format("cd {} && mkdir src && for i in $(seq 1 100); do head -c 102400 "
                          "/dev/urandom > src/f$i; done && {} record -o t.trace -- sh -c 'cat src/* "
                          ">/dev/null && dd if=/dev/zero of=big bs=1M count=20 status=none' >{} 2>&1",
                          work.path(), FSRR_BIN, work / "record.log")) == 0);
  const std::string out = work / "min.trace";
  REQUIRE(run(fmt::format("{} minimize {} -o {} --fs ext4:size=32M --quiet -- sh -c 'grep -q "
                          "ENOSPC \"$FSRR_REPORT\"' >{} 2>&1",
                          FSRR_BIN, work / "t.trace", out, work / "min.log")) == 0);
  INFO(slurp(work / "min.log"));
  REQUIRE(run(fmt::format("{} dump {} --tree --json >{}", FSRR_BIN, out, work / "d.json")) == 0);
  std::vector<uint64_t> src_files;
  std::set<std::string> ops;
  std::istringstream lines(slurp(work / "d.json"));
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line);
    if (e.contains("tree")) {
      if (e["type"] == "file" && e["tree"].get<std::string>().starts_with(work / "src/"))
        src_files.push_back(e["size"]);
    } else {
      ops.insert(e.value("comm", std::string()) + " " + e.value("op", std::string()));
    }
  }
  REQUIRE(src_files.size() == 1);       // of a hundred,
  CHECK(src_files[0] >= 100 * 102400);  // holding them all
  CHECK(ops.count("cat read") == 0);    // and cat gone
  CHECK(ops.count("dd write") == 1);
  CHECK(events_in(out, work / "i.json") <= 15);
}

TEST_CASE("minimize merges a process's threads and drops what the predicate does not need",
          "[share][minimize]") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  std::ofstream(work / "w.py") << "import threading\n"
                                  "def work(n):\n"
                                  "    with open(f'out{n}', 'w') as f: f.write('x' * 100)\n"
                                  "ts = [threading.Thread(target=work, args=(n,)) for n in range(2)]\n"
                                  "for t in ts: t.start()\n"
                                  "for t in ts: t.join()\n";
  const std::string trace = work / "t.trace", out = work / "min.trace";
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- python3 w.py >{} 2>&1", work.path(),
                          FSRR_BIN, trace, work / "record.log")) == 0);
  const std::string predicate = fmt::format(
      "sh -c 'test -f \"$FSRR_TARGET\"{0}/out0 && test -f \"$FSRR_TARGET\"{0}/out1'", work.path());
  REQUIRE(run(fmt::format("{} minimize {} -o {} --quiet -- {} >{} 2>&1", FSRR_BIN, trace, out,
                          predicate, work / "min.log")) == 0);
  INFO(slurp(work / "min.log"));
  CHECK(slurp(work / "min.log").find("\nmerge threads ") != std::string::npos);
  REQUIRE(run(fmt::format("{} dump {} --json >{}", FSRR_BIN, out, work / "d.json")) == 0);
  std::set<int64_t> tids;
  std::vector<std::string> ops;
  std::istringstream lines(slurp(work / "d.json"));
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line);
    tids.insert(e["tid"].get<int64_t>());
    ops.push_back(e["op"]);
  }
  CHECK(tids.size() == 1);  // one thread does both creates
  CHECK(std::count(ops.begin(), ops.end(), "openat") == 2);
  CHECK(std::count(ops.begin(), ops.end(), "write") == 0);  // the data is not what it asks
  CHECK(ops.size() <= 5);
}

TEST_CASE("minimize says so when the predicate does not hold on the whole trace",
          "[share][minimize]") {
  if (!can_record()) return;
  auto& rec = recorded_shell::get();
  const std::string log = rec.work / "never.log";
  CHECK(run(fmt::format("{} minimize {} -o {} --quiet -- false >{} 2>&1", FSRR_BIN, rec.trace,
                        rec.work / "never.trace", log)) == 1);
  CHECK(slurp(log) ==
        "fsrr: the predicate does not hold on the whole trace (it exited with 1): nothing to "
        "minimize\n");
  CHECK(::access((rec.work / "never.trace").c_str(), F_OK) != 0);
}

TEST_CASE("export --shell: the script builds what replay builds, and names nothing outside its TARGET",
          "[share][export]") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  // creates, appends, a write in the middle (dd seek), truncation, renames over a name, hard
  // and symbolic links, a directory made, renamed and emptied, modes, an fsync
  std::ofstream(work / "w.sh") << "mkdir -p d/sub\n"
                                  "for i in 1 2 3 4 5; do head -c $((i * 1000)) /dev/zero > d/f$i; done\n"
                                  "echo more >> d/f1\n"
                                  "dd if=/dev/zero of=d/f2 bs=100 seek=50 count=3 conv=notrunc status=none\n"
                                  "truncate -s 777 d/f3\n"
                                  "mv d/f4 d/f5\n"
                                  "ln d/f1 d/hard\n"
                                  "ln -s f2 d/soft\n"
                                  "chmod 600 d/f2\n"
                                  "mv d/sub d/moved\n"
                                  "head -c 4096 /dev/zero > d/moved/x && sync d/moved/x\n"
                                  "rm d/f3\n";
  const std::string trace = work / "t.trace", script = work / "repro.sh";
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- sh w.sh >{} 2>&1", work.path(), FSRR_BIN,
                          trace, work / "record.log")) == 0);
  REQUIRE(run(fmt::format("{} export {} --shell {} >{} 2>&1", FSRR_BIN, trace, script,
                          work / "export.log")) == 0);
  INFO(slurp(work / "export.log"));
  const std::string text = slurp(script);
  CHECK(text.starts_with("#!/bin/bash\n"));
  // every command names "$T" before any path: no line writes an absolute path of its own
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    INFO(line);
    const size_t quote = line.find('\'');
    if (quote != std::string::npos && line.find("'/") != std::string::npos)
      CHECK(line.find("\"$T\"'/") != std::string::npos);
  }
  temp_dir a("/dev/shm"), b("/dev/shm");
  REQUIRE(run(fmt::format("bash {} {} >{} 2>&1", script, a.path(), work / "script.log")) == 0);
  INFO(slurp(work / "script.log"));
  REQUIRE(run(fmt::format("{} replay {} {} --timing afap --no-progress >/dev/null 2>&1", FSRR_BIN,
                          trace, b.path())) == 0);
  // the workload's directory alike in both: names, types, sizes, modes, link targets, links
  const auto listing = [&](const temp_dir& t, const std::string& name) {
    REQUIRE(run(fmt::format("cd {}{}/d && find . -printf '%P %y %s %m %l %n\\n' | sort >{}",
                            t.path(), work.path(), work / name)) == 0);
    return slurp(work / name);
  };
  const std::string from_script = listing(a, "a.txt"), from_replay = listing(b, "b.txt");
  CHECK(from_script == from_replay);
  CHECK(from_script.find("f2 f 5300 600") != std::string::npos);   // dd wrote at 5000
  CHECK(from_script.find("moved/x f 4096") != std::string::npos);
  CHECK(from_script.find("soft l 2 777 f2") != std::string::npos);
  CHECK(from_script.find("f3 ") == std::string::npos);
  // refused: an existing file
  CHECK(run(fmt::format("{} export {} --shell {} >/dev/null 2>&1", FSRR_BIN, trace, script)) == 1);
  CHECK(run(fmt::format("{} export {} >/dev/null 2>&1", FSRR_BIN, trace)) != 0);
}

TEST_CASE("export --fio: fio replays the trace's reads and writes, byte for byte, inside DIR only",
          "[share][export]") {
  if (!can_record()) return;
  auto& rec = recorded_rsync_copy::get();
  temp_dir notes("/dev/shm");  // what the test writes, apart from what it looks at
  const std::string dir = rec.work / "fio", listing = notes / "listing";
  REQUIRE(run(fmt::format("{} export {} --fio {} >{} 2>&1", FSRR_BIN, rec.trace, dir,
                          notes / "export.log")) == 0);
  INFO(slurp(notes / "export.log"));
  const std::string list_outside = fmt::format(
      "find {} -mindepth 1 -path {} -prune -o -printf '%p %s %T@\\n' | sort >", rec.work.path(),
      dir);
  REQUIRE(run(list_outside + listing + ".before") == 0);
  // no recorded path anywhere in what fio reads
  REQUIRE(run(fmt::format("! grep -rq {} {}/*.iolog", rec.work / "src", dir)) == 0);
  REQUIRE(run(fmt::format("cd {} && fio --output-format=json --output={}/out.json {}/fsrr.fio "
                          ">{}/fio.log 2>&1",
                          rec.work.path(), dir, dir, dir)) == 0);
  INFO(slurp(dir + "/fio.log"));
  const auto j = nlohmann::json::parse(slurp(dir + "/out.json"));
  uint64_t read = 0, written = 0;
  size_t jobs = 0;
  for (const auto& job : j["jobs"]) {
    CHECK(job["error"] == 0);
    if (job["jobname"] == "layout") continue;
    ++jobs;
    read += job["read"]["io_bytes"].get<uint64_t>();
    written += job["write"]["io_bytes"].get<uint64_t>();
  }
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, rec.trace, notes / "info.json")) == 0);
  const auto info = nlohmann::json::parse(slurp(notes / "info.json"));
  CHECK(jobs == 3);  // rsync's three processes
  CHECK(read == info["bytes_read"].get<uint64_t>());
  CHECK(written == info["bytes_written"].get<uint64_t>());
  // fio wrote beneath DIR/data, and nothing outside DIR changed
  REQUIRE(run(list_outside + listing + ".after") == 0);
  CHECK(slurp(listing + ".before") == slurp(listing + ".after"));
  CHECK(run(fmt::format("test -n \"$(ls -A {}/data)\"", dir)) == 0);
  // a second export into the same directory is refused: it is not empty
  CHECK(run(fmt::format("{} export {} --fio {} >/dev/null 2>&1", FSRR_BIN, rec.trace, dir)) == 1);
}

namespace {

// Per op: its events and its non-file counts together (the recorder's view of every call).
std::map<std::string, uint64_t> calls_of(const std::string& trace, const std::string& scratch) {
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, trace, scratch)) == 0);
  const auto j = nlohmann::json::parse(slurp(scratch));
  std::map<std::string, uint64_t> n;
  for (const auto& [op, c] : j["ops"].items()) n[op] += c.get<uint64_t>();
  for (const auto& [kind, ops] : j["nonfile_ops"].items())
    for (const auto& [op, c] : ops.items()) n[op] += c.get<uint64_t>();
  n.erase("fd_bind");  // not a syscall: how each tells of an fd it finds open
  return n;
}

}  // namespace

TEST_CASE("import strace: a real strace of cp -a gives the calls fsrr's own recording has, and "
          "replays",
          "[share][import]") {
  if (!can_record()) return;
  auto& rec = recorded_rsync_copy::get();
  const std::string log = rec.work / "cp.strace", imported = rec.work / "cp-imported.trace",
                    recorded = rec.work / "cp-recorded.trace";
  REQUIRE(run(fmt::format("cd {} && strace -f -ttt -T -y -s 4096 -o {} cp -a src cp-copy && "
                          "rm -rf cp-copy",
                          rec.work.path(), log)) == 0);
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- cp -a src cp-copy >/dev/null 2>&1 && "
                          "rm -rf cp-copy",
                          rec.work.path(), FSRR_BIN, recorded)) == 0);
  REQUIRE(run(fmt::format("{} import strace {} -o {} >{}.out 2>&1", FSRR_BIN, log, imported,
                          imported)) == 0);
  INFO(slurp(imported + ".out"));
  const auto a = calls_of(recorded, rec.work / "a.json"), b = calls_of(imported, rec.work / "b.json");
  CHECK(a.size() >= 15);
  for (const auto& [op, n] : a) {
    INFO(op);
    CHECK(b.count(op) == 1);
    if (b.count(op)) CHECK(b.at(op) == n);
  }
  for (const auto& [op, n] : b) {
    INFO(op);
    CHECK(a.count(op) == 1);
  }
  REQUIRE(run(fmt::format("{} info {} --json >{}", FSRR_BIN, imported, rec.work / "imp.json")) == 0);
  CHECK(nlohmann::json::parse(slurp(rec.work / "imp.json"))["derived"] == "import strace");
  replays_alone(imported, rec.work, "imported-cp");
}

TEST_CASE("import strace -yy of rsync: the sockets carry the data flow, the copy is a copy",
          "[share][import]") {
  if (!can_record()) return;
  auto& rec = recorded_rsync_copy::get();
  const std::string log = rec.work / "rsync.strace", imported = rec.work / "rsync-imported.trace";
  REQUIRE(run(fmt::format("cd {} && strace -f -ttt -T -yy -s 4096 -o {} rsync -aAHX src/ yy-copy "
                          "&& rm -rf yy-copy",
                          rec.work.path(), log)) == 0);
  REQUIRE(run(fmt::format("{} import strace {} -o {} >/dev/null 2>&1", FSRR_BIN, log, imported)) == 0);
  temp_dir target("/dev/shm");
  REQUIRE(run(fmt::format("{} replay {} {} --data random --timing afap --no-progress --report {} "
                          ">/dev/null 2>&1",
                          FSRR_BIN, imported, target.path(), rec.work / "yy.json")) == 0);
  const auto r = nlohmann::json::parse(slurp(rec.work / "yy.json"));
  CHECK(r["mismatches"] == 0);
  CHECK(r["data_flow"]["written_from"]["reads"] == 900000 + 300 * 301 / 2 * 37);
  CHECK(run(fmt::format("diff -r {0}{1}/src {0}{1}/yy-copy", target.path(), rec.work.path())) == 0);
}
