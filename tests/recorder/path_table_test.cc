// The decoder's path table resolving a syscall's name against the live file system, which it
// reads behind the workload: symlinks on the way are followed, and a directory the workload
// renames meanwhile never lends its new name to an older syscall.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "trace_error.h"
#include "path_table.h"
#include "temp_dir.h"
#include "trace_writer.h"

using namespace fsrr;

namespace {

struct table {
  test::temp_dir scratch;
  trace_writer w = or_throw(trace_writer::create(scratch / "t.trace", {}));
  recorder::path_table paths{w};
  int root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  table() { paths.add_top(root_path, root); }
  ~table() {
    w.abandon();
    ::close(root);
  }
  std::string resolved(const std::string& name) { return paths.str(paths.resolve(root_path, name)); }
};

}  // namespace

TEST_CASE("path table: a symlink among the leading components is followed, a missing directory taken as written") {
  table t;
  test::temp_dir d;
  REQUIRE(::mkdir((d / "real").c_str(), 0755) == 0);
  REQUIRE(::symlink("real", (d / "link").c_str()) == 0);
  CHECK(t.resolved(d / "link/x") == d / "real/x");
  CHECK(t.resolved(d / "real/x") == d / "real/x");
  CHECK(t.resolved(d / "gone/x") == d / "gone/x");
  CHECK(t.resolved(d / "link/gone/x") == d / "real/gone/x");
}

// borg fills txn.tmp and renames it txn.active right away: the decoder, behind, opened
// txn.tmp before the rename and read its name back after it.
TEST_CASE("path table: a directory renamed while it is resolved keeps the name the syscall used") {
  table t;
  test::temp_dir d;
  constexpr int rounds = 3000;
  std::atomic<int> asked{-1};
  std::thread renamer([&] {
    for (int i = 0; i < rounds; ++i) {
      while (asked.load() < i) std::this_thread::yield();
      ::rename((d / "tmp" + std::to_string(i)).c_str(), (d / "active" + std::to_string(i)).c_str());
    }
  });
  int wrong = 0;
  for (int i = 0; i < rounds; ++i) {
    const std::string dir = d / "tmp" + std::to_string(i);
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    t.paths.forget_resolutions();
    asked.store(i);
    if (t.resolved(dir + "/config") != dir + "/config") ++wrong;
  }
  renamer.join();
  CHECK(wrong == 0);
}
