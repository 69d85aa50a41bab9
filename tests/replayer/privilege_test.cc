// A shared trace must not hand whoever replays it privileges: set-id bits, device nodes,
// security.*/trusted.* xattrs and other owners only when asked (--owners, --keep-privileged);
// and prepare refuses a tree the target has no room for before writing any of it.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "end_state.h"
#include "loop_fs.h"
#include "replay.h"
#include "temp_dir.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "verify.h"

using namespace fsrr;

namespace {

constexpr uint32_t stranger = 4321;  // a uid and gid nobody on the box has

// The tree: a set-gid directory, a set-uid file with privileged and plain xattrs, a
// character device. The events: a set-uid create, a chmod to 06755, a trusted.* xattr set,
// a chown to a stranger.
void write_trace(const std::string& path) {
  test::trace_builder b(path);
  trace_writer& w = b.writer();
  b.tree_dir("/d", 02775);
  tree_entry f;
  f.path = b.path("/d/suid");
  f.mode = S_IFREG | 04755;
  f.size = 3;
  f.allocated = 4096;
  for (const char* name : {"security.fsrr", "trusted.fsrr", "user.fsrr"})
    f.xattrs.push_back({b.str(name), 8});
  w.add_tree_entry(f);
  tree_entry dev;
  dev.path = b.path("/d/disk");
  dev.mode = S_IFCHR | 0600;
  w.add_tree_entry(dev);

  const thread_id t = b.thread(100, 100, 1);
  event& o = b.next(t, op::openat, 3);
  o.path = b.path("/d/new");
  o.file = b.file(9);
  o.flags = O_WRONLY | O_CREAT | O_EXCL;
  o.mode = 04711;
  event& m = b.next(t, op::fchmod, 0);
  m.fd = 3, m.file = b.file(9), m.mode = 06755;
  event& x = b.next(t, op::fsetxattr, 0);
  x.fd = 3, x.file = b.file(9), x.aux = b.str("trusted.new"), x.size = 4;
  event& g = b.next(t, op::fgetxattr, 4);
  g.fd = 3, g.file = b.file(9), g.aux = b.str("trusted.new"), g.size = 64;
  event& c = b.next(t, op::fchown, 0);
  c.fd = 3, c.file = b.file(9), c.aux = uint64_t{stranger} << 32 | stranger;
  event& e = b.next(t, op::close, 0);
  e.fd = 3, e.file = b.file(9);
  b.finish();
}

std::vector<std::string> xattr_names(const std::string& path) {
  char buf[4096];
  const ssize_t n = ::llistxattr(path.c_str(), buf, sizeof buf);
  std::vector<std::string> out;
  for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(std::strlen(buf + i)) + 1)
    out.emplace_back(buf + i);
  std::sort(out.begin(), out.end());
  return out;
}

uint32_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

struct replayed {
  test::temp_dir tmp{"/dev/shm"};
  std::string trace = tmp / "t.trace", target = tmp / "target";
  replay_outcome out;

  explicit replayed(const privilege_options& p) {
    write_trace(trace);
    REQUIRE(::mkdir(target.c_str(), 0755) == 0);
    trace_reader r = or_throw(trace_reader::open(trace));
    replay_options o;
    o.target = target;
    o.timing = "afap";
    o.privilege = p;
    out = or_throw(run_replay(r, o));
  }
  // verify's differences, with or without the privileged parts
  std::vector<std::string> differences(bool keep_privileged, bool owners = false) {
    trace_reader r = or_throw(trace_reader::open(trace));
    target_root root = or_throw(target_root::open(target));
    verify_options vo;
    vo.keep_privileged = keep_privileged;
    vo.owners = owners;
    std::vector<std::string> out;
    for (const auto& d : compare(or_throw(expected_end_state(r)), root, vo))
      out.push_back(d.path + ": " + d.what);
    return out;
  }
};

}  // namespace

TEST_CASE("by default a replay makes no set-id bits, device nodes, privileged xattrs or owners") {
  if (!test::require_root("owners and trusted.* xattrs need root")) return;
  replayed r({});
  const prepare_result& p = r.out.report.prepare;
  CHECK(p.errors == 0);
  CHECK(p.files == 1);
  CHECK(p.skipped == 1);   // the device
  CHECK(p.withheld == 4);  // two set-id modes, two xattrs
  CHECK(p.xattrs == 1);
  CHECK(mode_of(r.target + "/d") == 0775);
  CHECK(mode_of(r.target + "/d/suid") == 0755);
  CHECK(xattr_names(r.target + "/d/suid") == std::vector<std::string>{"user.fsrr"});
  struct stat st {};
  CHECK(::lstat((r.target + "/d/disk").c_str(), &st) == -1);
  CHECK(mode_of(r.target + "/d/new") == 0755);
  CHECK(xattr_names(r.target + "/d/new").empty());
  REQUIRE(::lstat((r.target + "/d/new").c_str(), &st) == 0);
  CHECK(st.st_uid == ::geteuid());  // the chown was issued as chown(-1, -1)
  const replay_stats& s = r.out.report.replay;
  CHECK(s.mismatches == 0);
  CHECK(s.differences == 2);  // the trusted.* set and get, not issued
  CHECK(s.by_cause[static_cast<size_t>(env_cause::privileged)] == 2);
  CHECK(s.ops[static_cast<size_t>(op::fchown)].count == 1);
  // verify leaves out what the replay left out, and sees it when asked to
  CHECK(r.differences(false).empty());  // (device nodes are not expected)
  CHECK(r.differences(true) == std::vector<std::string>{
                                   "/d: mode 0775, expected 2775",
                                   "/d/suid: mode 0755, expected 4755",
                                   "/d/suid: xattrs [user.fsrr=8], expected "
                                   "[security.fsrr=8,trusted.fsrr=8,user.fsrr=8]"});
}

TEST_CASE("set-id bits, privileged xattrs and owners come back with --keep-privileged and --owners") {
  if (!test::require_root("owners and trusted.* xattrs need root")) return;
  replayed r({.owners = true, .keep_privileged = true});
  const prepare_result& p = r.out.report.prepare;
  CHECK(p.errors == 0);
  CHECK(p.withheld == 0);
  CHECK(p.xattrs == 3);
  CHECK(p.skipped == 1);  // device nodes never
  CHECK(mode_of(r.target + "/d") == 02775);
  CHECK(mode_of(r.target + "/d/suid") == 04755);
  CHECK(xattr_names(r.target + "/d/suid") ==
        std::vector<std::string>{"security.fsrr", "trusted.fsrr", "user.fsrr"});
  struct stat st {};
  REQUIRE(::lstat((r.target + "/d/new").c_str(), &st) == 0);
  CHECK(st.st_uid == stranger);
  CHECK(st.st_gid == stranger);
  // chown clears set-id bits, as it did where the trace was recorded
  CHECK((st.st_mode & 07777) == 0755);
  CHECK(xattr_names(r.target + "/d/new") == std::vector<std::string>{"trusted.new"});
  const replay_stats& s = r.out.report.replay;
  CHECK(s.mismatches == 0);
  CHECK(s.differences == 0);
  CHECK(r.differences(true, true).empty());
}

TEST_CASE("prepare refuses a tree the target has no room for, before writing any of it") {
  if (!test::require_root("mounting a small tmpfs needs root")) return;
  test::temp_dir tmp("/dev/shm");
  const std::string trace = tmp / "big.trace";
  {
    test::trace_builder b(trace);
    b.tree_dir("/data");
    for (int i = 0; i < 3; ++i) b.tree_file(fmt::format("/data/f{}", i), 1 << 20);
    b.finish();
  }
  const std::string small = tmp / "small";
  REQUIRE(::mkdir(small.c_str(), 0755) == 0);
  REQUIRE(test::run(fmt::format("mount -t tmpfs -o size=2m,nr_inodes=1000 fsrr-test {}", small)) ==
          0);
  struct unmount {
    std::string at;
    ~unmount() { test::run("umount " + at); }
  } guard{small};
  trace_reader r = or_throw(trace_reader::open(trace));
  replay_options o;
  o.target = small;
  o.timing = "afap";
  try {
    or_throw(run_replay(r, o));
    FAIL("a 3 MiB tree was prepared on a 2 MiB file system");
  } catch (const trace_error& e) {
    CHECK(std::string(e.what()) ==
          fmt::format("the initial tree needs 3145728 bytes on the file system of {}, which has "
                      "2097152 bytes free (--no-space-check to try anyway)",
                      small));
  }
  // nothing was written
  CHECK(test::run(fmt::format("test -z \"$(ls -A {})\"", small)) == 0);

  // inodes: 1000 - 1 (its root) free; a tree of 1001 entries
  const std::string many = tmp / "many.trace";
  {
    test::trace_builder b(many);
    for (int i = 0; i < 1001; ++i) b.tree_dir(fmt::format("/d{}", i));
    b.finish();
  }
  trace_reader m = or_throw(trace_reader::open(many));
  replay_options mo;
  mo.target = small;
  try {
    or_throw(run_replay(m, mo));
    FAIL("1001 directories were prepared where 999 inodes were free");
  } catch (const trace_error& e) {
    CHECK(std::string(e.what()) ==
          fmt::format("the initial tree needs 1001 inodes on the file system of {}, which has "
                      "999 free (--no-space-check to try anyway)",
                      small));
  }
  // a tree that fits goes in
  const std::string fits = tmp / "fits.trace";
  {
    test::trace_builder b(fits);
    b.tree_dir("/data");
    b.tree_file("/data/f", 1 << 20);
    b.finish();
  }
  trace_reader f = or_throw(trace_reader::open(fits));
  const replay_outcome out = or_throw(run_replay(f, mo));
  CHECK(out.report.prepare.errors == 0);
  CHECK(out.report.prepare.bytes == 1 << 20);
}
