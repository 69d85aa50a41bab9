// The bug classes real clients exposed (tests/clients/), each as the smallest workload that
// showed it, recorded and replayed on tmpfs, ext4, xfs and btrfs: 0 mismatches, verified.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "e2e.h"
#include "temp_dir.h"

using namespace fsrr::test;

namespace {

void script(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// The initial tree's paths, as dump --tree gives them.
std::vector<std::string> tree_of(const std::string& trace) {
  const std::string out = trace + ".tree";
  REQUIRE(run(fmt::format("{} dump {} --tree --json >{}", FSRR_BIN, trace, out)) == 0);
  std::vector<std::string> paths;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (!j.contains("tree")) break;  // the events follow the tree
    paths.push_back(j["tree"].get<std::string>());
  }
  return paths;
}

size_t below(const std::vector<std::string>& paths, const std::string& dir) {
  size_t n = 0;
  for (const auto& p : paths) n += p == dir || p.rfind(dir + "/", 0) == 0;
  return n;
}

}  // namespace

// Debian's /usr/bin/lzma -> /etc/alternatives/lzma -> /usr/bin/xz, its usrmerge /bin ->
// usr/bin, and relative links with '..': replay used to refuse the absolute ones (EXDEV), and
// the recorder kept only the first link of a chain. (An open is recorded at the path it
// resolved to; a stat or exec names the link, and the link is what the tree must hold.)
TEST_CASE("absolute and relative symlink chains are followed through stat, open and exec") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  const std::string t = work.path();
  REQUIRE(run(fmt::format(
              "mkdir -p {0}/usr/bin {0}/usr/lib/x86_64-linux-gnu {0}/usr/lib64 "
              "{0}/etc/alternatives && printf '#!/bin/sh\\necho tool\\n' >{0}/usr/bin/tool-gnu && "
              "chmod 755 {0}/usr/bin/tool-gnu && echo so >{0}/usr/lib/x86_64-linux-gnu/ld.so && "
              "ln -s usr/bin {0}/bin && ln -s usr/lib {0}/lib && "
              "ln -s {0}/bin/tool-gnu {0}/etc/alternatives/tool && "
              "ln -s {0}/etc/alternatives/tool {0}/usr/bin/tool && "
              "ln -s {0}/lib/x86_64-linux-gnu/ld.so {0}/usr/lib64/ld.so && "
              "ln -s ../../etc/alternatives/tool {0}/usr/lib64/rel-tool && "
              "ln -s ../../../../../../etc {0}/usr/bin/up && sleep 0.1",
              t)) == 0);
  script(work / "run.sh", fmt::format("stat -L {0}/usr/bin/tool >/dev/null\n"
                                      "cat {0}/usr/bin/tool >/dev/null\n"
                                      "{0}/usr/bin/tool >/dev/null\n"
                                      "stat -L {0}/usr/lib64/ld.so >/dev/null\n"
                                      "stat -L {0}/usr/lib64/rel-tool >/dev/null\n"
                                      "cat {0}/usr/lib64/rel-tool {0}/usr/lib64/ld.so >/dev/null\n"
                                      "stat -L {0}/usr/bin/up >/dev/null\n"
                                      "readlink -f {0}/usr/bin/tool >/dev/null\n",
                                      t));
  const auto info = record_and_replay(t, "sh run.sh", 50);
  const auto tree = tree_of(work / "t.trace");
  for (const char* link : {"/usr/bin/tool", "/etc/alternatives/tool", "/bin", "/lib",
                           "/usr/lib64/ld.so", "/usr/lib64/rel-tool"}) {
    INFO(link);
    CHECK(std::count(tree.begin(), tree.end(), t + link) == 1);
  }
}

// A lock protocol (borg's): a directory that a stat found missing is made, a lock directory
// is made, filled and renamed into place, then emptied and removed. None of it is older than
// the workload, so none of it may be in the initial tree.
TEST_CASE("what a workload makes, moves and removes never enters the initial tree") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  script(work / "run.sh",
         "stat repo 2>/dev/null || mkdir repo\n"
         "mkdir repo/lock.x1.tmp && echo $$ >repo/lock.x1.tmp/owner\n"
         "mv repo/lock.x1.tmp repo/lock.exclusive\n"
         "cat repo/lock.exclusive/owner >/dev/null\n"
         "rm repo/lock.exclusive/owner && rmdir repo/lock.exclusive\n"
         "echo data >repo/config\n");
  record_and_replay(work.path(), "sh run.sh", 10);
  CHECK(below(tree_of(work / "t.trace"), work / "repo") == 0);
}

// The same protocol 300 times over beside a CPU hog per CPU, so that the decoder falls behind
// and looks at paths long after the workload changed them.
TEST_CASE("a lock protocol recorded while the decoder falls behind leaves the tree empty of it") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  script(work / "run.sh",
         "for c in $(seq $(nproc)); do (while :; do :; done) & pids=\"$pids $!\"; done\n"
         "trap 'kill $pids' EXIT\n"
         "mkdir repo\n"
         "for i in $(seq 300); do\n"
         "  stat repo/lock.exclusive 2>/dev/null\n"
         "  mkdir repo/lock.$i.tmp && echo $i >repo/lock.$i.tmp/owner\n"
         "  mv repo/lock.$i.tmp repo/lock.exclusive\n"
         "  rm repo/lock.exclusive/owner && rmdir repo/lock.exclusive\n"
         "done\n");
  record_and_replay(work.path(), "sh run.sh", 300 * 6);
  CHECK(below(tree_of(work / "t.trace"), work / "repo") == 0);
}

// git init runs chdir("repo"), fails, makes it, then chdir("repo") again: the recorder took
// the second name from the cwd it had just made, and put repo/repo in the tree.
TEST_CASE("a relative chdir after the directory is made names it, not a child of it") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  script(work / "run.sh", "cd repo 2>/dev/null || { mkdir repo && cd repo; }\ntouch f\n");
  record_and_replay(work.path(), "sh run.sh", 5);
  CHECK(below(tree_of(work / "t.trace"), work / "repo") == 0);
}

// 3,000 names listed by ls and find: on another file system (or in another order on the
// same one) the entries come back in other portions per getdents call.
TEST_CASE("a directory of 3,000 entries lists exactly on every file system") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  REQUIRE(run(fmt::format("mkdir {0}/d && cd {0}/d && for i in $(seq 3000); do "
                          ": >entry-with-a-long-name-$((i * 7919 % 3001)); done && sleep 0.1",
                          work.path())) == 0);
  record_and_replay(work.path(), "ls -f d >/dev/null; find d -name \"*7*\" >/dev/null", 10);
  for (const char* fs : {"tmpfs", "ext4", "xfs", "btrfs"}) {
    if (::access((work / fmt::format("{}.json", fs)).c_str(), R_OK) != 0) continue;
    const auto r = nlohmann::json::parse(slurp(work / fmt::format("{}.json", fs)));
    INFO(fs);
    CHECK(r["ops"]["getdents64"]["mismatches"] == 0);
    CHECK(r["differences"].value("getdents64", 0) ==
          r["differences_by_cause"].value("listing_split", 0));
  }
}

// POSIX shared memory (shm_open: a file directly in /dev/shm, mapped MAP_SHARED) is memory
// processes share, as a database server's is; a file mapped so anywhere else is storage whose
// writes tracing cannot see.
TEST_CASE("shm_open's object is IPC, a file mapped elsewhere is written page by page") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  const auto info = record_and_replay(
      work.path(),
      "python3 -c \"from multiprocessing import shared_memory as s; "
      "m = s.SharedMemory(create=True, size=1 << 20); m.buf[:5] = b\\\"hello\\\"; "
      "m.close(); m.unlink(); open(\\\"out\\\", \\\"w\\\").write(\\\"x\\\")\"",
      20);
  CHECK(info["incomplete_reasons"].empty());

  temp_dir mapped("/dev/shm");
  REQUIRE(::mkdir((mapped / "sub").c_str(), 0755) == 0);
  REQUIRE(run(fmt::format(
              "cd {} && {} record -o t.trace -- python3 -c \"import mmap; f = open(\\\"sub/f\\\", "
              "\\\"w+b\\\"); f.truncate(4096); m = mmap.mmap(f.fileno(), 4096); m[:2] = b\\\"hi\\\"; "
              "m.close()\" >record.log 2>&1 && {} info t.trace --json >info.json",
              mapped.path(), FSRR_BIN, FSRR_BIN)) == 0);
  const auto sub = nlohmann::json::parse(slurp(mapped / "info.json"));
  CHECK(sub["complete"] == true);  // its store is followed: page 0 of sub/f written
  CHECK(sub["bytes_written"] == 4096);
}

// A Unix socket bound to a name makes a file (PostgreSQL's .s.PGSQL.5432), which the server
// then chmods and at its end unlinks.
TEST_CASE("a Unix socket's file made by bind is replayed as made, changed and removed") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  record_and_replay(work.path(),
                    "python3 -c \"import os, socket; s = socket.socket(socket.AF_UNIX); "
                    "s.bind(\\\"sock\\\"); os.chmod(\\\"sock\\\", 0o700); s.close(); "
                    "os.unlink(\\\"sock\\\"); t = socket.socket(socket.AF_UNIX); "
                    "t.bind(\\\"kept\\\"); os.chmod(\\\"kept\\\", 0o600)\"",
                    5);
  const auto r = nlohmann::json::parse(slurp(work / "tmpfs.json"));
  CHECK(r["ops"]["bind"]["count"] == 2);
  CHECK(below(tree_of(work / "t.trace"), work / "sock") == 0);
}

// os.stat("") fails with ENOENT before the kernel looks at any file: there is no path to
// replay it on (taken as the cwd, it succeeded on replay).
TEST_CASE("a call the kernel refuses for its empty name is not replayed on the directory") {
  if (!can_record()) return;
  temp_dir work("/dev/shm");
  record_and_replay(work.path(),
                    "python3 -c \"import os\ntry: os.stat(\\\"\\\")\nexcept OSError: pass\"", 5);
}
