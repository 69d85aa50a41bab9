// The end state a recording implies, checked against a target by verify's compare().
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tuple>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "end_state.h"
#include "verify.h"
#include "replay_fixture.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "workloads.h"

using namespace fsrr;
using namespace fsrr::test;

namespace {

std::vector<difference> check(replay_fixture& f) {
  trace_reader r = or_throw(trace_reader::open(f.trace));
  target_root t = or_throw(target_root::open(f.target));
  return compare(or_throw(expected_end_state(r)), t, {});
}

}  // namespace

TEST_CASE("a copy's end state has every destination file with its final size and mode") {
  replay_fixture f;
  record_cp(f.trace, 10);
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  for (int i = 0; i < 10; ++i) {
    const expected_entry& e = s.at(fmt::format("/dst/f{}", i));
    CHECK_FALSE(e.absent);
    CHECK(e.mode == (S_IFREG | 0644));
    CHECK(e.check_mode);
    CHECK(e.check_size);
    CHECK(e.size == file_size(i));
    CHECK(e.check_mtime);
    CHECK(e.mtime_ns == 1'600'000'000'000'000'000);
  }
  CHECK(s.at("/dst").mode == (S_IFDIR | 0755));
  CHECK(s.at("/src/f1").check_mtime);
}

TEST_CASE("without the content model the end state is the same but for the changed files' bytes") {
  replay_fixture f;
  record_rsync(f.trace, 6);
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state with = or_throw(expected_end_state(r, model_content::yes));
  const expected_state without = or_throw(expected_end_state(r, model_content::no));
  REQUIRE(with.size() == without.size());
  size_t copies = 0;
  for (const auto& [path, w] : with) {
    const expected_entry& o = without.at(path);
    CHECK(o.absent == w.absent);
    CHECK(o.mode == w.mode);
    CHECK(o.size == w.size);
    CHECK(o.check_size == w.check_size);
    CHECK(o.check_mtime == w.check_mtime);
    CHECK(o.mtime_ns == w.mtime_ns);
    CHECK(o.check_mode == w.check_mode);
    CHECK(o.uid == w.uid);
    CHECK(o.gid == w.gid);
    CHECK(o.check_owner == w.check_owner);
    CHECK(o.xattrs == w.xattrs);
    CHECK(o.target == w.target);
    CHECK(o.link_group == w.link_group);
    CHECK(o.changed == w.changed);
    if (!w.changed) {  // the initial tree's files: what prepare wrote, either way
      CHECK(o.check_content == w.check_content);
      CHECK(o.content == w.content);
    } else if (S_ISREG(w.mode) && !w.absent) {
      CHECK(w.check_content);  // a copy: the bytes of its source
      CHECK(w.content.size() == (w.size > 0 ? 1u : 0u));  // file_size(0) is 0
      CHECK_FALSE(o.check_content);
      CHECK(o.content.empty());
      ++copies;
    }
  }
  CHECK(copies == 6);
}

TEST_CASE("renames are applied: the temporary names are expected absent") {
  replay_fixture f;
  record_rsync(f.trace, 4);
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  CHECK(s.at("/dst/.f2.XXXXXX").absent);
  CHECK(s.at("/dst/f2").size == file_size(2));
  CHECK(s.at("/dst/f2").mode == (S_IFREG | 0644));
}

TEST_CASE("a replayed copy passes the end-state check") {
  replay_fixture f;
  record_cp(f.trace, 10);
  f.replay();
  for (const auto& d : check(f)) FAIL_CHECK(d.path << ": " << d.what);
}

TEST_CASE("a replayed rsync passes the end-state check") {
  replay_fixture f;
  record_rsync(f.trace, 10);
  f.replay();
  for (const auto& d : check(f)) FAIL_CHECK(d.path << ": " << d.what);
}

TEST_CASE("the check names a missing file, a wrong size, a wrong mode and a leftover") {
  replay_fixture f;
  record_rsync(f.trace, 4);
  f.replay();
  ::unlink((f.target + "/dst/f0").c_str());
  ::truncate((f.target + "/dst/f1").c_str(), 5);
  ::chmod((f.target + "/dst/f2").c_str(), 0600);
  ::close(::creat((f.target + "/dst/.f3.XXXXXX").c_str(), 0644));
  const auto d = check(f);
  REQUIRE(d.size() == 4);
  CHECK(d[0].path == "/dst/.f3.XXXXXX");
  CHECK(d[0].what == "exists, expected absent");
  CHECK(d[1].path == "/dst/f0");
  CHECK(d[1].what == "missing");
  CHECK(d[2].what == "size 5, expected 4096");
  CHECK(d[3].what == "mode 0600, expected 0644");
}

TEST_CASE("a workload's symlinks, hard links, truncates and removals shape the end state") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_dir("/d");
    b.tree_file("/d/a", 5000);
    b.tree_file("/d/gone", 10);
    const file_id a = b.file(2);
    event& o = b.next(t, op::openat, 3);
    o.path = b.path("/d/a");
    o.file = a;
    o.flags = O_RDWR;
    event& tr = b.next(t, op::ftruncate);
    tr.fd = 3;
    tr.file = a;
    tr.size = 100;
    event& ln = b.next(t, op::link);
    ln.path = b.path("/d/a");
    ln.path2 = b.path("/d/b");
    event& sl = b.next(t, op::symlink);
    sl.path = b.path("/d/s");
    sl.aux = b.str("a");
    b.next(t, op::unlink).path = b.path("/d/gone");
    event& w = b.next(t, op::pwrite64, 50);
    w.fd = 3;
    w.file = a;
    w.offset = 200;
    w.size = 50;
    b.next(t, op::close).fd = 3;
    b.finish();
  }
  const replay_stats st = f.replay();
  CHECK(st.mismatches == 0);
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  CHECK(s.at("/d/b").size == 250);
  CHECK(s.at("/d/a").size == 250);
  CHECK(s.at("/d/a").link_group == s.at("/d/b").link_group);
  CHECK(s.at("/d/a").link_group != 0);
  CHECK(s.at("/d/s").target == "a");
  CHECK(s.at("/d/gone").absent);
  for (const auto& d : check(f)) FAIL_CHECK(d.path << ": " << d.what);
}

TEST_CASE("a rename from one name of an inode to another leaves both names") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_file("/a", 10);
    event& ln = b.next(t, op::link);
    ln.path = b.path("/a");
    ln.path2 = b.path("/b");
    event& mv = b.next(t, op::rename);
    mv.path = b.path("/a");
    mv.path2 = b.path("/b");
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  REQUIRE(s.count("/a") == 1);
  CHECK_FALSE(s.at("/a").absent);
  CHECK(s.at("/a").size == 10);
  REQUIRE(s.count("/b") == 1);
  CHECK(s.at("/b").size == 10);
}

TEST_CASE("an access ACL set with recorded permission bits is expected as the file's mode") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_file("/f", 10, 0600);
    event& sx = b.next(t, op::setxattr);
    sx.path = b.path("/f");
    sx.aux = b.str("system.posix_acl_access");
    sx.size = 28;
    sx.mode = acl_mode_present | 0751;
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  CHECK(s.at("/f").check_mode);
  CHECK(s.at("/f").mode == (S_IFREG | 0751));
}

TEST_CASE("a file created by an open changes its directory's mtime, which is then not checked") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_dir("/d");
    b.tree_dir("/e");
    event& o = b.next(t, op::openat, 3);
    o.path = b.path("/d/new");
    o.flags = O_WRONLY | O_CREAT | O_TRUNC;
    o.mode = 0644;
    o.file = b.file(7);
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  CHECK_FALSE(s.at("/d/new").absent);
  CHECK_FALSE(s.at("/d").check_mtime);
  CHECK(s.at("/e").check_mtime);
}

TEST_CASE("the *xattrat calls shape the expected xattrs, an AT_EMPTY_PATH one on the fd's file") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_file("/f", 10);
    const file_id file = b.file(7);
    event& o = b.next(t, op::openat, 3);
    o.path = b.path("/f");
    o.file = file;
    o.flags = O_RDONLY;
    event& mv = b.next(t, op::rename);
    mv.path = b.path("/f");
    mv.path2 = b.path("/g");
    mv.file = file;
    // on fd 3, whose recorded path is still the name it was opened by
    auto on_fd = [&](op kind, const char* name, uint64_t size) {
      event& e = b.next(t, kind);
      e.fd = 3;
      e.file = file;
      e.path = b.path("/f");
      e.flags = AT_EMPTY_PATH;
      e.aux = b.str(name);
      e.size = size;
    };
    event& a = b.next(t, op::setxattrat);
    a.path = b.path("/g");
    a.aux = b.str("user.a");
    a.size = 5;
    on_fd(op::setxattrat, "user.b", 300);
    on_fd(op::setxattrat, "user.tmp", 1);
    on_fd(op::removexattrat, "user.tmp", 0);
    b.next(t, op::close).fd = 3;
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  CHECK(s.at("/f").absent);
  CHECK(s.at("/g").check_xattrs);
  CHECK(s.at("/g").xattrs ==
        std::vector<std::pair<std::string, uint32_t>>{{"user.a", 5}, {"user.b", 300}});
  CHECK(f.replay().mismatches == 0);
  CHECK(check(f).empty());
}

TEST_CASE("chowns shape the expected owners: a half chown keeps the tree entry's other id") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    auto tree_owned = [&](const std::string& p, uint32_t mode) {
      tree_entry e;
      e.path = b.path(p);
      e.mode = S_IFREG | mode;
      e.uid = 1000;
      e.gid = 100;
      b.writer().add_tree_entry(e);
    };
    tree_owned("/kept", 0644);
    tree_owned("/half", 0644);
    tree_owned("/suid", 04755);
    const auto chown = [&](const char* p, uint32_t uid, uint32_t gid) {
      event& e = b.next(t, op::chown);
      e.path = b.path(p);
      e.aux = uint64_t{uid} << 32 | gid;
    };
    event& x = b.next(t, op::setxattrat);  // its rare fields made before the chown
    x.path = b.path("/half");
    x.aux = b.str("user.a");
    x.size = 5;
    chown("/half", 2000, UINT32_MAX);
    chown("/suid", UINT32_MAX, 300);
    // files the workload makes: owners unknown until a chown sets both
    for (const char* p : {"/new_half", "/new_full"}) {
      event& o = b.next(t, op::openat, 3);
      o.path = b.path(p);
      o.flags = O_WRONLY | O_CREAT;
      b.next(t, op::close).fd = 3;
    }
    chown("/new_half", 4000, UINT32_MAX);
    chown("/new_full", 4000, 5000);
    chown("/new_full", UINT32_MAX, 6000);
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  const auto owner = [&](const char* p) {
    const expected_entry& e = s.at(p);
    return std::tuple(e.check_owner, e.uid, e.gid);
  };
  CHECK(owner("/kept") == std::tuple(true, 1000u, 100u));
  CHECK(owner("/half") == std::tuple(true, 2000u, 100u));
  CHECK(s.at("/half").xattrs == std::vector<std::pair<std::string, uint32_t>>{{"user.a", 5}});
  CHECK(owner("/suid") == std::tuple(true, 1000u, 300u));
  CHECK(s.at("/suid").mode == (S_IFREG | 0755));  // a chown clears set-uid
  CHECK_FALSE(std::get<0>(owner("/new_half")));
  CHECK(owner("/new_full") == std::tuple(true, 4000u, 6000u));
}

TEST_CASE("a trace of two roots is modelled beneath /root1 and /root2, names alike kept apart") {
  replay_fixture f;
  {
    trace_builder b(f.trace);
    trace_writer& w = b.writer();
    w.add_root({});
    const uint32_t second = w.add_root({});
    const thread_id t = b.thread(1, 1, 1);
    const path_id top2 = w.root_top(second);
    const path_id data1 = b.path("/data"), data2 = w.intern_child(top2, "data");
    const path_id f1 = w.intern_child(data1, "f"), f2 = w.intern_child(data2, "f");
    const path_id g2 = w.intern_child(data2, "g");
    for (const path_id d : {data1, data2}) {
      tree_entry e;
      e.path = d;
      e.mode = S_IFDIR | 0755;
      w.add_tree_entry(e);
    }
    const auto create = [&](path_id p, int64_t bytes) {
      const file_id file = b.file(static_cast<uint64_t>(10 + bytes));
      event& o = b.next(t, op::openat, 3);
      o.path = p;
      o.flags = O_WRONLY | O_CREAT;
      o.file = file;
      event& wr = b.next(t, op::write, bytes);  // o is no more: the builder stages one event
      wr.fd = 3;
      wr.file = file;
      wr.size = static_cast<uint64_t>(bytes);
      b.next(t, op::close).fd = 3;
    };
    create(f1, 100);
    create(f2, 200);
    event& mv = b.next(t, op::rename);  // in root 2 only
    mv.path = f2;
    mv.path2 = g2;
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  const expected_state s = or_throw(expected_end_state(r));
  CHECK(s.at("/root1/data/f").size == 100);
  CHECK_FALSE(s.at("/root1/data/f").absent);
  CHECK(s.at("/root2/data/f").absent);
  CHECK(s.at("/root2/data/g").size == 200);
  CHECK(s.at("/root2/data").mode == (S_IFDIR | 0755));
  CHECK(s.count("/root1/data/g") == 0);
  CHECK(s.count("/data/f") == 0);
  CHECK(f.replay().mismatches == 0);  // and a replay of it is what the model expects
  CHECK(check(f).empty());
}

TEST_CASE("a large state is checked by several threads with the same differences, in path order") {
  temp_dir dir("/dev/shm");
  const std::string top = dir / "t";
  ::mkdir(top.c_str(), 0755);
  // 40,000 files of 3 bytes in 40 directories; every entry expected as it is
  expected_state expected;
  const auto file_at = [&](int i) { return fmt::format("/d{:02}/f{:05}", i / 1000, i); };
  for (int d = 0; d < 40; ++d) {
    const std::string p = fmt::format("/d{:02}", d);
    ::mkdir((top + p).c_str(), 0755);
    expected[p] = {.mode = S_IFDIR | 0755, .check_mtime = false, .check_owner = false,
                   .check_xattrs = false};
  }
  bool written = true;
  for (int i = 0; i < 40000; ++i) {
    const std::string p = file_at(i);
    const int fd = ::open((top + p).c_str(), O_WRONLY | O_CREAT, 0644);
    written = written && ::write(fd, "abc", 3) == 3;
    ::close(fd);
    expected[p] = {.mode = S_IFREG | 0644, .size = 3, .check_mtime = false,
                   .check_owner = false, .check_xattrs = false};
  }
  REQUIRE(written);
  // a size wrong in the first range, a file missing in the middle, a mode at the very end,
  // and a hard-link group whose two names (first and last range) are two inodes
  ::truncate((top + file_at(7)).c_str(), 1);
  ::unlink((top + file_at(20001)).c_str());
  ::chmod((top + file_at(39999)).c_str(), 0600);
  expected[file_at(3)].link_group = 1;
  expected[file_at(39990)].link_group = 1;
  target_root target = or_throw(target_root::open(top));
  const auto one = compare(expected, target, {.threads = 1});
  const auto three = compare(expected, target, {.threads = 3});
  REQUIRE(one.size() == 4);
  CHECK(one[0].path == file_at(7));
  CHECK(one[0].what == "size 1, expected 3");
  CHECK(one[1].path == file_at(20001));
  CHECK(one[1].what == "missing");
  CHECK(one[2].path == file_at(39990));
  CHECK(one[2].what == "not a hard link of the other names of its inode");
  CHECK(one[3].path == file_at(39999));
  CHECK(one[3].what == "mode 0600, expected 0644");
  REQUIRE(three.size() == one.size());
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(three[i].path == one[i].path);
    CHECK(three[i].what == one[i].what);
  }
}

TEST_CASE("the end-state model's fd handles are reused: its memory follows the open fds") {
  replay_fixture f;
  record_cp(f.trace, 200);  // 400 file opens, 2 of directories; at most 2 open at once
  trace_reader r = or_throw(trace_reader::open(f.trace));
  end_state_model m(r);
  auto events = r.events();
  uint64_t opens = 0;
  for (event e; events.next(e);) {
    opens += e.kind == op::openat;
    m.apply(e);
  }
  REQUIRE(events.status());
  CHECK(opens == 402);
  CHECK(m.fds().handle_capacity() == 3);  // handle 0 (none) and two (402 without reuse)
  CHECK(m.result().at("/dst/f199").size == file_size(199));
}

TEST_CASE("taking the end state apart as it is handed out gives the state result() gives") {
  replay_fixture f;
  SECTION("rsync: temporary names renamed over") {
    record_rsync(f.trace, 30);
  }
  SECTION("hard links, a truncate, a removal, a rename of a directory") {
    trace_builder b(f.trace);
    const thread_id t = b.thread(1, 1, 1);
    b.tree_dir("/d");
    b.tree_dir("/d/sub");
    b.tree_file("/d/sub/x", 10);
    b.tree_file("/d/a", 5000);
    b.tree_file("/d/gone", 10);
    const file_id a = b.file(2);
    event& o = b.next(t, op::openat, 3);
    o.path = b.path("/d/a");
    o.file = a;
    o.flags = O_RDWR;
    event& tr = b.next(t, op::ftruncate);
    tr.fd = 3;
    tr.file = a;
    tr.size = 100;
    for (const char* name : {"/d/b", "/d/sub/c"}) {
      event& ln = b.next(t, op::link);
      ln.path = b.path("/d/a");
      ln.path2 = b.path(name);
    }
    b.next(t, op::unlink).path = b.path("/d/gone");
    event& mv = b.next(t, op::rename);
    mv.path = b.path("/d/sub");
    mv.path2 = b.path("/d/moved");
    b.next(t, op::close).fd = 3;
    b.finish();
  }
  trace_reader r = or_throw(trace_reader::open(f.trace));
  end_state_model whole(r), taken(r);
  auto events = r.events();
  for (event e; events.next(e);) {
    whole.apply(e);
    taken.apply(e);
  }
  REQUIRE(events.status());
  const expected_state want = whole.result(), got = taken.take();
  REQUIRE(got.size() == want.size());
  CHECK(got.size() >= 8);  // the second: /d, a, b, gone, sub, moved, moved/x, moved/c
  for (auto g = got.begin(), w = want.begin(); g != got.end(); ++g, ++w) {
    INFO(g->first);
    REQUIRE(g->first == w->first);
    const expected_entry &x = g->second, &y = w->second;
    CHECK(x.absent == y.absent);
    CHECK(x.mode == y.mode);
    CHECK(x.check_mode == y.check_mode);
    CHECK(x.size == y.size);
    CHECK(x.check_size == y.check_size);
    CHECK(x.target == y.target);
    CHECK(x.mtime_ns == y.mtime_ns);
    CHECK(x.check_mtime == y.check_mtime);
    CHECK(x.xattrs == y.xattrs);
    CHECK(x.link_group == y.link_group);
    CHECK(x.content == y.content);
    CHECK(x.check_content == y.check_content);
    CHECK(x.tree_index == y.tree_index);
    CHECK(x.changed == y.changed);
  }
  if (got.count("/d/moved/c")) {
    CHECK(got.at("/d/a").link_group != 0);
    CHECK(got.at("/d/moved/c").link_group == got.at("/d/a").link_group);
    CHECK(got.at("/d/b").size == 100);
    CHECK(got.at("/d/sub").absent);
    CHECK(got.at("/d/moved/x").size == 10);
  }
}

TEST_CASE("verify's check a part at a time finds what the whole state's check finds") {
  replay_fixture f;
  record_rsync(f.trace, 30);
  REQUIRE(f.replay().mismatches == 0);
  REQUIRE(::unlink((f.target + "/dst/f3").c_str()) == 0);
  REQUIRE(::truncate((f.target + "/dst/f7").c_str(), 1) == 0);
  const int leftover = ::open((f.target + "/dst/.f5.XXXXXX").c_str(), O_CREAT | O_WRONLY, 0600);
  REQUIRE(leftover >= 0);
  ::close(leftover);
  trace_reader r = or_throw(trace_reader::open(f.trace));
  target_root t = or_throw(target_root::open(f.target));
  verify_options o;
  o.times = false;
  const expected_state whole = or_throw(expected_end_state(r));
  const auto want = compare(whole, t, o);
  comparer c(t, o);
  REQUIRE(check_end_state(r, c, model_content::yes, 3));
  CHECK(c.checked() == whole.size());
  const auto got = c.finish();
  REQUIRE(want.size() == 3);
  CHECK(want[0].path == "/dst/.f5.XXXXXX");
  CHECK(want[0].what == "exists, expected absent");
  CHECK(want[1].path == "/dst/f3");
  CHECK(want[1].what == "missing");
  CHECK(want[2].path == "/dst/f7");
  CHECK(want[2].what == fmt::format("size 1, expected {}", file_size(7)));
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].path == want[i].path);
    CHECK(got[i].what == want[i].what);
  }
  // A path handed out in two parts (a removed path under two ids) is one difference.
  comparer twice(t, o);
  expected_state part;
  part["/dst/.f5.XXXXXX"].absent = true;
  twice.check(part);
  twice.check(part);
  const auto once = twice.finish();
  REQUIRE(once.size() == 1);
  CHECK(once[0].what == "exists, expected absent");
}

TEST_CASE("every name of a hard-linked tree file is expected to hold what prepare wrote") {
  // Tree order is not path order here: prepare makes /a/x (the group's first entry) and links
  // /a-b to it, so /a-b must be expected to hold /a/x's bytes.
  replay_fixture f;
  {
    trace_builder b(f.trace);
    b.thread(1, 1, 1);
    b.tree_dir("/a");
    for (const char* p : {"/a/x", "/a-b"}) {
      tree_entry e;
      e.path = b.path(p);
      e.mode = S_IFREG | 0644;
      e.size = e.allocated = 3000;
      e.nlink = 2;
      e.link_group = 1;
      b.writer().add_tree_entry(e);
    }
    b.finish();
  }
  data_spec random;
  random.kind = data_kind::random;
  random.seed = 7;
  f.replay(afap(), random);
  trace_reader r = or_throw(trace_reader::open(f.trace));
  target_root t = or_throw(target_root::open(f.target));
  const data_source data(random);
  verify_options o;
  o.content = &data;
  const expected_state s = expected_from_tree(r);
  CHECK(s.at("/a-b").content == s.at("/a/x").content);
  for (const auto& d : compare(s, t, o)) FAIL_CHECK(d.path << ": " << d.what);
  struct stat x, y;
  REQUIRE(::stat((f.target + "/a/x").c_str(), &x) == 0);
  REQUIRE(::stat((f.target + "/a-b").c_str(), &y) == 0);
  CHECK(x.st_ino == y.st_ino);
}
