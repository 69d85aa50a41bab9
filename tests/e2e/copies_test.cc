// A replayed copy is a copy: the bytes of every file a recorded program copied equal its
// replayed source, whichever way it copied (read/write, a pipe, a socket, the kernel), on
// tmpfs and btrfs; fresh data still comes from the generator; verify --content checks it all.
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <zstd.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

// src/: files of odd sizes, two different files of one size, an empty one, a directory.
const std::vector<std::pair<std::string, uint64_t>> source_files = {
    {"one", 1000},   {"two", 1000},      {"odd", 77777},  {"mib", 1048579},
    {"empty", 0},    {"sub/x", 4096},    {"sub/y", 300001}};
uint64_t source_bytes() {
  uint64_t n = 0;
  for (const auto& [name, size] : source_files) n += size;
  return n;
}

// Every way the seeds' users copy, in one recording, plus data no file held before.
const char* const copy_workload =
    "rsync -aAHX src/ rsync-copy && "
    "mkdir tar-copy && tar -C src -cf - . | tar -C tar-copy -xf - && "
    "cat src/odd > cat-copy && cat src/odd | cat > cat-piped && "
    "dd if=src/mib of=dd-copy bs=4097 2>/dev/null && "
    "cp -a src cp-copy && "
    "python3 -c \"import shutil; shutil.copytree(\\\"src\\\", \\\"py-copy\\\")\" && "
    "head -c 300000 /dev/urandom > fresh && "
    "dd if=/dev/zero of=zeros bs=4096 count=8 2>/dev/null";

struct recorded_copies {
  temp_dir work{"/dev/shm"};
  std::string trace = work / "copies.trace";
  recorded_copies() {
    REQUIRE(run("mkdir -p " + work / "src/sub") == 0);
    for (const auto& [name, size] : source_files)
      REQUIRE(run(fmt::format("head -c {} /dev/urandom >{}", size, work / ("src/" + name))) == 0);
    REQUIRE(run(fmt::format("cd {} && {} record -o {} -- sh -c '{}' >{} 2>&1", work.path(),
                            FSRR_BIN, trace, copy_workload, work / "record.log")) == 0);
  }
  static recorded_copies& get() {
    static recorded_copies r;
    return r;
  }
};

nlohmann::json replay(const std::string& trace, const std::string& target, const std::string& data,
                      const std::string& report) {
  const int status =
      run(fmt::format("{} replay {} {} --data {} --timing afap --no-progress --report {} >{}.out 2>&1",
                      FSRR_BIN, trace, target, data, report, report));
  INFO(slurp(report + ".out"));
  REQUIRE(status == 0);
  return nlohmann::json::parse(slurp(report));
}

bool same(const std::string& a, const std::string& b) {
  return run(fmt::format("cmp -s {} {}", a, b)) == 0;
}

int verify_content(const std::string& trace, const std::string& target, const std::string& data,
                   const std::string& log) {
  return run(fmt::format("{} verify {} {} --content --no-times --data {} >{} 2>&1", FSRR_BIN,
                         trace, target, data, log));
}

// The zstd ratio of `path`, each 128 KiB chunk compressed alone (as btrfs does).
double chunk_ratio(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chunk(128 << 10), out(ZSTD_compressBound(chunk.size()));
  uint64_t raw = 0, packed = 0;
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    const size_t n = static_cast<size_t>(in.gcount());
    const size_t z = ZSTD_compress(out.data(), out.size(), chunk.data(), n, 3);
    raw += n;
    packed += std::min(z, n);
  }
  return packed ? static_cast<double>(raw) / static_cast<double>(packed) : 0;
}

}  // namespace

TEST_CASE("every copy a recorded program made is a copy after replay, on tmpfs and btrfs",
          "[copies]") {
  if (!can_record() || !require_root("btrfs image")) return;
  auto& rec = recorded_copies::get();
  INFO(slurp(rec.work / "record.log"));
  for (const char* fs : {"tmpfs", "btrfs"}) {
    SECTION(fs) {
      loop_fs mnt(fs, 512);
      const auto report = replay(rec.trace, mnt.path(), "random", rec.work / "report.json");
      CHECK(report["mismatches"] == 0);
      const std::string at = mnt.path() + rec.work.path();
      for (const auto& [name, size] : source_files) {
        INFO(name);
        for (const char* copy : {"rsync-copy", "tar-copy", "cp-copy", "py-copy"})
          CHECK(same(at + "/src/" + name, at + "/" + copy + "/" + name));
      }
      CHECK(same(at + "/src/odd", at + "/cat-copy"));
      CHECK(same(at + "/src/odd", at + "/cat-piped"));
      CHECK(same(at + "/src/mib", at + "/dd-copy"));
      CHECK(!same(at + "/src/one", at + "/src/two"));  // one size, two files: two contents
      CHECK(run(fmt::format("cmp -s -n 32768 /dev/zero {}", at + "/zeros")) == 0);
      // bytes by origin: rsync, tar, dd and cat through a pipe in user space; cp, Python and
      // cat into a file (coreutils 9 copies with copy_file_range) in the kernel
      const auto& flow = report["data_flow"]["written_from"];
      CHECK(flow["reads"] == 2 * source_bytes() + 1048579 + 77777);
      CHECK(flow["kernel_copies"] == 2 * source_bytes() + 77777);
      CHECK(flow["dev_zero"] == 32768);
      CHECK(flow["generator"] == 300000);
      CHECK(flow["unmatched"] == 0);
      CHECK(report["data_flow"]["stream_bytes"]["pipes"].get<uint64_t>() > source_bytes());
      CHECK(report["data_flow"]["stream_bytes"]["sockets"].get<uint64_t>() > source_bytes());
      CHECK(report["bytes_written"].get<uint64_t>() < 8 * source_bytes());  // no stream bytes

      const std::string log = rec.work / "verify.log";
      CHECK(verify_content(rec.trace, mnt.path(), "random", log) == 0);
      INFO(slurp(log));
      // one byte changed in a copy, one in the fresh data: each is found, at its offset
      REQUIRE(run(fmt::format("printf Z | dd of={} bs=1 seek=100 conv=notrunc 2>/dev/null",
                              at + "/rsync-copy/odd")) == 0);
      REQUIRE(run(fmt::format("printf Z | dd of={} bs=1 seek=7 conv=notrunc 2>/dev/null",
                              at + "/fresh")) == 0);
      CHECK(verify_content(rec.trace, mnt.path(), "random", log) == 1);
      const std::string found = slurp(log);
      CHECK(found.find(rec.work / "rsync-copy/odd: content differs at byte 100") != std::string::npos);
      CHECK(found.find(rec.work / "fresh: content differs at byte 7") != std::string::npos);
      CHECK(found.find("2 of ") != std::string::npos);
      // two bytes no generator makes: no other --data is offered as the answer
      CHECK(found.find("\nfsrr: verify: no content matches --data zero, random or compress:2 "
                       "with --seed 0: give verify the replay's --data, --dedupe and --seed\n") !=
            std::string::npos);
    }
  }
}

TEST_CASE("fresh data still comes from the generator: compress:2 holds in the written file",
          "[copies]") {
  if (!can_record()) return;
  auto& rec = recorded_copies::get();
  temp_dir target("/dev/shm");
  const auto report = replay(rec.trace, target.path(), "compress:2", rec.work / "c2.json");
  CHECK(report["mismatches"] == 0);
  const double ratio = chunk_ratio(target.path() + rec.work.path() + "/fresh");
  CHECK(ratio > 1.8);
  CHECK(ratio < 2.2);
  // and the copies are still copies of their sources
  const std::string at = target.path() + rec.work.path();
  CHECK(same(at + "/src/mib", at + "/tar-copy/mib"));
  CHECK(verify_content(rec.trace, target.path(), "compress:2", rec.work / "c2.verify") == 0);
  // the trace does not say which --data the replay used: verify, told another, finds it
  CHECK(verify_content(rec.trace, target.path(), "zero", rec.work / "zero.verify") == 1);
  const std::string told = slurp(rec.work / "zero.verify");
  CHECK(told.find("\nfsrr: verify: every content matches --data compress:2 --seed 0: the replay "
                  "was given that\n") != std::string::npos);
}

TEST_CASE("on btrfs without inline extents, duperemove finds a replayed rsync's destination "
          "duplicated by its source",
          "[copies]") {
  if (!can_record() || !require_root("btrfs image")) return;
  temp_dir work("/dev/shm");
  REQUIRE(run("mkdir " + work / "src") == 0);
  for (int i = 1; i <= 10; ++i)
    REQUIRE(run(fmt::format("head -c {} /dev/urandom >{}/f{}", i * 100000 + 13, work / "src", i)) == 0);
  for (int i = 1; i <= 20; ++i)
    REQUIRE(run(fmt::format("head -c 1000 /dev/urandom >{}/s{}", work / "src", i)) == 0);
  const std::string trace = work / "rsync.trace";
  REQUIRE(run(fmt::format("cd {} && {} record -o {} -- rsync -aAHX src/ dst 2>/dev/null",
                          work.path(), FSRR_BIN, trace)) == 0);
  // small files would otherwise live inline in metadata, where nothing is shared
  loop_fs mnt("btrfs", 512, "max_inline=0");
  replay(trace, mnt.path(), "random", work / "report.json");
  const std::string at = mnt.path() + work.path();
  REQUIRE(run(fmt::format("sync && duperemove -d -b 4k -r {}/src {}/dst >{} 2>&1", at, at,
                          work / "duperemove.log")) == 0);
  INFO(slurp(work / "duperemove.log"));
  // btrfs filesystem du --raw: total, exclusive, set shared, name
  REQUIRE(run(fmt::format("btrfs filesystem du --raw -s {}/dst | tail -1 >{}", at,
                          work / "du")) == 0);
  uint64_t total = 0, exclusive = 0, shared = 0;
  std::ifstream(work / "du") >> total >> exclusive >> shared;
  INFO(slurp(work / "du"));
  REQUIRE(total > 5'000'000);
  CHECK(static_cast<double>(shared) >= 0.9 * static_cast<double>(total));
}
