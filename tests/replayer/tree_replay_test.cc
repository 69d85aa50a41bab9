// snapshot → replay → verify of a tree holding every entry kind, on tmpfs, ext4, xfs and
// btrfs: the job of Oleg Drokin's dd-per-file script, done right.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "loop_fs.h"
#include "replay.h"
#include "replay_fixture.h"
#include "temp_dir.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "tree_fixture.h"
#include "tree_snapshot.h"
#include "verify.h"

using namespace fsrr;

namespace {

header_info snapshot_header() {
  header_info h;
  h.writer = "fsrr test";
  h.kind = trace_kind::snapshot;
  return h;
}

struct source {
  test::temp_dir dir{"/dev/shm"};
  test::tree_fixture_counts counts;
  std::string trace;
  source() {
    counts = test::build_tree_fixture(dir.path());
    trace = dir / "tree.trace";
    trace_writer w = or_throw(trace_writer::create(trace, snapshot_header()));
    or_throw(snapshot_tree(w, dir / "data"));
    or_throw(w.finish());
  }
};

replay_outcome replay_into(const std::string& trace, const std::string& target,
                           const std::string& data = "random") {
  trace_reader r = or_throw(trace_reader::open(trace));
  replay_options o;
  o.target = target;
  o.data = or_throw(data_spec::parse(data, 0, 7));
  return or_throw(run_replay(r, o));
}

}  // namespace

TEST_CASE("a snapshot records every entry kind with its facts") {
  source s;
  trace_reader r = or_throw(trace_reader::open(s.trace));
  const auto& t = r.summary().tree;
  CHECK(t.files == s.counts.files + s.counts.hardlinks);
  CHECK(t.dirs == s.counts.dirs);
  CHECK(t.symlinks == s.counts.symlinks);
  CHECK(t.other == s.counts.fifos);
  const std::string base = s.dir.path() + "/data";
  bool saw_sparse = false, saw_page = false, saw_link = false;
  for (const auto& e : r.tree()) {
    const std::string p = r.path_string(e.path);
    if (p == base + "/sparse") {
      saw_sparse = true;
      CHECK(e.size == 64u << 20);
      REQUIRE(e.extents.size() == 1);
      CHECK(e.extents[0].offset == 8u << 20);
      CHECK(e.extents[0].length == 4096);
    } else if (p == base + "/a/page") {
      saw_page = true;
      CHECK(e.mtime_ns == 1234567890123456789);
      CHECK((e.mode & 07777) == 0644);
    } else if (p == base + "/a/abs-dangling") {
      saw_link = true;
      CHECK(r.string(e.target) == "/nowhere/at/all");
    }
  }
  CHECK(saw_sparse);
  CHECK(saw_page);
  CHECK(saw_link);
}

TEST_CASE("a snapshot replays and verifies on tmpfs") {
  source s;
  test::temp_dir target("/dev/shm");
  const auto out = replay_into(s.trace, target.path());
  CHECK(out.report.prepare.errors == 0);
  CHECK(out.report.prepare.files == s.counts.files);
  CHECK(out.report.prepare.hardlinks == s.counts.hardlinks);
  CHECK(out.report.prepare.symlinks == s.counts.symlinks);
  CHECK(out.report.prepare.other == s.counts.fifos);
  // Sparse files are written only where they hold data.
  CHECK(out.report.prepare.bytes == s.counts.bytes - (64u << 20) + 4096);
  trace_reader r = or_throw(trace_reader::open(s.trace));
  target_root root = or_throw(target_root::open(target.path()));
  const auto diffs = compare(expected_from_tree(r), root, {true, true});
  for (const auto& d : diffs) UNSCOPED_INFO(d.path << ": " << d.what);
  CHECK(diffs.empty());
  struct stat st;
  REQUIRE(::stat((target.path() + s.dir.path() + "/data/sparse").c_str(), &st) == 0);
  CHECK(st.st_blocks * 512 < 64 * 4096);  // still sparse
}

TEST_CASE("the same seed replays the same bytes, another seed others") {
  source s;
  test::temp_dir a("/dev/shm"), b("/dev/shm"), c("/dev/shm");
  replay_into(s.trace, a.path());
  replay_into(s.trace, b.path());
  {
    trace_reader r = or_throw(trace_reader::open(s.trace));
    replay_options o;
    o.target = c.path();
    o.data = or_throw(data_spec::parse("random", 0, 8));
    or_throw(run_replay(r, o));
  }
  const std::string big = s.dir.path() + "/data/a/b/c/big";
  CHECK(test::run("cmp -s " + a.path() + big + " " + b.path() + big) == 0);
  CHECK(test::run("cmp -s " + a.path() + big + " " + c.path() + big) == 1);
}

TEST_CASE("a non-empty target is refused without --force and nothing is written") {
  source s;
  test::temp_dir target("/dev/shm");
  test::run("touch " + target.path() + "/precious");
  CHECK_THROWS_WITH(replay_into(s.trace, target.path()),
                    Catch::Contains("is not empty (use --force to replay into it anyway)"));
  CHECK(test::run("test \"$(ls -A " + target.path() + ")\" = precious") == 0);
}

TEST_CASE("verify lists what differs") {
  source s;
  test::temp_dir target("/dev/shm");
  replay_into(s.trace, target.path(), "zero");
  const std::string d = target.path() + s.dir.path() + "/data";
  REQUIRE(::truncate((d + "/a/odd").c_str(), 1) == 0);
  REQUIRE(::chmod((d + "/private").c_str(), 0644) == 0);
  REQUIRE(::unlink((d + "/rel-link").c_str()) == 0);
  REQUIRE(::symlink("elsewhere", (d + "/rel-link").c_str()) == 0);
  REQUIRE(::unlink((d + "/zero").c_str()) == 0);
  trace_reader r = or_throw(trace_reader::open(s.trace));
  target_root root = or_throw(target_root::open(target.path()));
  const auto diffs = compare(expected_from_tree(r), root, {false, false});
  std::map<std::string, std::string> by_path;
  for (const auto& x : diffs) by_path[x.path.substr(s.dir.path().size())] += x.what;
  CHECK(by_path.size() == 4);
  CHECK(by_path["/data/a/odd"] == "size 1, expected 4095");
  CHECK(by_path["/data/private"] == "mode 0644, expected 0600");
  CHECK(by_path["/data/rel-link"] == "link target 'elsewhere', expected 'one'");
  CHECK(by_path["/data/zero"] == "missing");
}

TEST_CASE("a snapshot replays and verifies on ext4, xfs and btrfs images") {
  if (!test::require_root("loop-mounted file systems")) return;
  source s;
  for (const char* fs : {"ext4", "xfs", "btrfs"}) {
    SECTION(fs) {
      test::loop_fs mnt(fs, 512);
      const auto out = replay_into(s.trace, mnt.path());  // lost+found does not count
      CHECK(out.report.prepare.errors == 0);
      CHECK(out.report.prepare.files == s.counts.files);
      trace_reader r = or_throw(trace_reader::open(s.trace));
      target_root root = or_throw(target_root::open(mnt.path()));
      const auto diffs = compare(expected_from_tree(r), root, {true, true});
      for (const auto& d : diffs) UNSCOPED_INFO(fs << " " << d.path << ": " << d.what);
      CHECK(diffs.empty());
    }
  }
}

// A symlink the recorder saw, but which was gone before it could read its target (a busy
// machine, another program's temporary link): prepare has nothing to point it at and leaves
// it out, as it does device nodes; it is no error, and verify does not expect it.
TEST_CASE("a symlink whose target the recording never read is left out, not an error") {
  test::replay_fixture f;
  {
    test::trace_builder b(f.trace);
    b.tree_dir("/d");
    b.tree_symlink("/d/known", "elsewhere");
    b.tree_symlink_unread("/d/gone");
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  target_root t = or_throw(target_root::open(f.target));
  data_source d({});
  const prepare_result res = or_throw(prepare_tree(r, t, d, prepare_options{}));
  CHECK(res.errors == 0);
  CHECK(res.symlinks == 1);
  CHECK(res.skipped == 1);
  struct stat st {};
  CHECK(::lstat((f.target + "/d/gone").c_str(), &st) == -1);
  REQUIRE(::lstat((f.target + "/d/known").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(compare(expected_from_tree(r), t, {true, true}).empty());
}

TEST_CASE("prepare leaves alone what is in place already, and builds the rest") {
  test::replay_fixture f;
  {
    test::trace_builder b(f.trace);
    b.tree_dir("/src");
    b.tree_file("/src/a", 100);
    b.tree_dir("/src/sub");
    b.tree_file("/src/sub/b", 200);
    b.tree_dir("/srcx");  // beside the prefix, not beneath it
    b.tree_file("/srcx/c", 300);
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  target_root t = or_throw(target_root::open(f.target));
  data_source d({});
  prepare_options p;
  p.in_place = {"/src"};
  const prepare_result res = or_throw(prepare_tree(r, t, d, p));
  CHECK(res.errors == 0);
  CHECK(res.files == 1);
  CHECK(res.dirs == 1);
  CHECK_FALSE(f.exists("src"));
  CHECK(f.size("srcx/c") == 300);
}
