#include "e2e.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "temp_dir.h"

namespace fsrr::test {

bool can_record() {
  struct stat st;
  const bool ok = ::geteuid() == 0 && ::stat("/sys/kernel/btf/vmlinux", &st) == 0;
  if (!ok && std::getenv("CI") && std::string(std::getenv("CI")) == "true")
    FAIL("recording needs root and /sys/kernel/btf/vmlinux, and CI=true forbids skipping");
  if (!ok) WARN("skipped: recording needs root and /sys/kernel/btf/vmlinux");
  return ok;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const std::string& path, size_t bytes, char fill) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << std::string(bytes, fill);
}

namespace {

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

}  // namespace

nlohmann::json record_and_replay(const std::string& dir, const std::string& command,
                                 uint64_t min_events) {
  const std::string trace = dir + "/t.trace";
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- sh -c '{}' >{}/record.log 2>&1", dir,
                          FSRR_BIN, trace, command, dir)) == 0);
  INFO(slurp(dir + "/record.log"));
  REQUIRE(run(fmt::format("{} info {} --json >{}/info.json", FSRR_BIN, trace, dir)) == 0);
  const auto info = nlohmann::json::parse(slurp(dir + "/info.json"));
  CHECK(info["lost_events"] == 0);
  CHECK(info["complete"] == true);
  CHECK(info["events"].get<uint64_t>() >= min_events);

  const auto check = [&](const std::string& fs, const std::string& target) {
    const std::string report = dir + "/" + fs + ".json";
    const auto o = replay(trace, target, report);
    INFO(fs << " replay: " << slurp(report + ".out"));
    CHECK(o.status == 0);
    INFO("first mismatches: " << o.report.value("first_mismatches", nlohmann::json()).dump(1));
    CHECK(o.report["mismatches"] == 0);
    const std::string log = dir + "/" + fs + ".verify";
    CHECK(verify(trace, target, log) == 0);
    INFO(slurp(log));
  };
  {
    temp_dir target("/dev/shm");
    check("tmpfs", target.path());
  }
  if (!require_root("loop-mounted file systems")) return info;
  for (const char* fs : {"ext4", "xfs", "btrfs"}) {
    loop_fs mnt(fs, 512);
    check(fs, mnt.path());
  }
  return info;
}

two_hosts record_two_hosts(const std::string& dir, const std::string& fsrr) {
  two_hosts h{dir + "/shared", dir + "/local", dir + "/a.trace", dir + "/b.trace",
              dir + "/ab.trace", dir + "/merge.log"};
  REQUIRE(run(fmt::format("mkdir -p {0} {1} && : >{0}/log", h.shared, h.local)) == 0);
  const std::string host_a = fmt::format(
      "echo a >>{1}/log; "
      "for i in 1 2 3; do (for k in $(seq 20); do echo \"a$i $k\" >>{0}/log; done) & done; "
      "wait; echo hello >{0}/from-a; : >{0}/a-done",
      h.shared, h.local);
  const std::string host_b = fmt::format(
      "while [ ! -e {0}/a-done ]; do sleep 0.01; done; echo b >>{1}/log; "
      "for i in 1 2 3; do (for k in $(seq 20); do echo \"b$i $k\" >>{0}/log; done) & done; "
      "wait; mv {0}/from-a {0}/renamed-by-b",
      h.shared, h.local);
  // both at once, each recorder following its own command only
  REQUIRE(run(fmt::format("({0} record -o {1} -- sh -c '{2}' >{3}/a.log 2>&1 &"
                          " {0} record -o {4} -- sh -c '{5}' >{3}/b.log 2>&1; wait)",
                          fsrr, h.a, host_a, dir, h.b, host_b)) == 0);
  INFO(slurp(dir + "/a.log") + slurp(dir + "/b.log"));
  REQUIRE(run(fmt::format("{} merge {} {} -o {} >{} 2>&1", fsrr, h.a, h.b, h.merged,
                          h.merge_log)) == 0);
  return h;
}

std::string left_behind(const std::string& dir) {
  std::string out;
  std::ifstream mounts("/proc/self/mounts");
  for (std::string line; std::getline(mounts, line);)
    if (line.find(dir) != std::string::npos) out += "mounted: " + line + "\n";
  temp_dir scratch("/dev/shm");
  run("losetup -a >" + scratch / "loops" + " 2>/dev/null");
  std::ifstream in(scratch / "loops");
  for (std::string line; std::getline(in, line);)
    if (line.find(dir) != std::string::npos) out += "loop: " + line + "\n";
  return out;
}

}  // namespace fsrr::test
