// A trace is untrusted input: whatever its names and symlinks say, replay creates nothing
// outside the target.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "loop_fs.h"
#include "replay.h"
#include "temp_dir.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;

namespace {

tree_entry entry(trace_writer& w, const std::string& p, uint32_t mode, uint64_t size = 0) {
  tree_entry e;
  e.path = w.intern_path(p);
  e.mode = mode;
  e.size = size;
  return e;
}

// The sandbox: `outside` must stay exactly as it was; the target lives inside it.
struct sandbox {
  test::temp_dir outside{"/dev/shm"};
  std::string target = outside / "target";
  std::string trace = outside / "hostile.trace";
  sandbox() { ::mkdir(target.c_str(), 0755); }
};

// Everything under the sandbox but the target itself.
std::string list_outside(const sandbox& s) {
  std::string out;
  FILE* p = ::popen(("cd " + s.outside.path() +
                     " && find . -path ./target -prune -o -print | sort")
                        .c_str(),
                    "r");
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

replay_outcome replay(const sandbox& s) {
  trace_reader r = or_throw(trace_reader::open(s.trace));
  replay_options o;
  o.target = s.target;
  return or_throw(run_replay(r, o));
}

}  // namespace

TEST_CASE("'..' components in a trace are refused, not followed") {
  sandbox s;
  {
    trace_writer w = or_throw(trace_writer::create(s.trace, {}));
    w.add_tree_entry(entry(w, "/../escaped-dir", S_IFDIR | 0755));
    w.add_tree_entry(entry(w, "/a/../../escaped-file", S_IFREG | 0644, 10));
    w.add_tree_entry(entry(w, "/ok/./file", S_IFREG | 0644, 10));
    w.add_tree_entry(entry(w, "/fine", S_IFREG | 0644, 3));
    or_throw(w.finish());
  }
  const std::string before = list_outside(s);
  const auto out = replay(s);
  CHECK(list_outside(s) == before);
  for (const auto& e : out.report.prepare.first_errors) UNSCOPED_INFO(e);
  system(("find " + s.target + " >&2").c_str());
  CHECK(out.report.prepare.errors == 3);
  CHECK(out.report.prepare.files == 1);
  CHECK(out.report.prepare.first_errors.at(0) == "/../escaped-dir: path is not confined to the target: "
                                          "Operation not permitted");
  struct stat st;
  CHECK(::stat((s.target + "/fine").c_str(), &st) == 0);
}

TEST_CASE("a symlink in the tree cannot redirect a later entry outside") {
  sandbox s;
  {
    trace_writer w = or_throw(trace_writer::create(s.trace, {}));
    auto abs = entry(w, "/x/abs", S_IFLNK | 0777);
    abs.target = w.intern_string(s.outside.path());
    auto rel = entry(w, "/x/rel", S_IFLNK | 0777);
    rel.target = w.intern_string("../../..");
    auto inner = entry(w, "/x/inner", S_IFLNK | 0777);
    inner.target = w.intern_string("sub");
    w.add_tree_entry(entry(w, "/x", S_IFDIR | 0755));
    w.add_tree_entry(entry(w, "/x/sub", S_IFDIR | 0755));
    w.add_tree_entry(abs);
    w.add_tree_entry(rel);
    w.add_tree_entry(inner);
    w.add_tree_entry(entry(w, "/x/abs/evil-abs", S_IFREG | 0644, 5));
    w.add_tree_entry(entry(w, "/x/rel/evil-rel", S_IFREG | 0644, 5));
    w.add_tree_entry(entry(w, "/x/abs/newdir/evil", S_IFREG | 0644, 5));
    w.add_tree_entry(entry(w, "/x/inner/ok", S_IFREG | 0644, 5));  // stays inside: allowed
    or_throw(w.finish());
  }
  const std::string before = list_outside(s);
  const auto out = replay(s);
  CHECK(list_outside(s) == before);
  // Links are followed as the recorded process followed them, in the trace's namespace: the
  // absolute one to a path the target lacks, the relative one up to the trace's root (its
  // '..' stays there, as at a process's root), which is the target's top.
  CHECK(out.report.prepare.errors == 2);
  CHECK(out.report.prepare.symlinks == 3);
  struct stat st;
  CHECK(::stat((s.target + "/x/sub/ok").c_str(), &st) == 0);
  CHECK(::stat((s.target + "/evil-rel").c_str(), &st) == 0);
}

TEST_CASE("a --map destination confines like the target") {
  sandbox s;
  const std::string mapped = s.outside / "mapped";
  ::mkdir(mapped.c_str(), 0755);
  {
    trace_writer w = or_throw(trace_writer::create(s.trace, {}));
    w.add_tree_entry(entry(w, "/data/f", S_IFREG | 0644, 4));
    w.add_tree_entry(entry(w, "/data/../../g", S_IFREG | 0644, 4));
    w.add_tree_entry(entry(w, "/other/h", S_IFREG | 0644, 4));
    or_throw(w.finish());
  }
  trace_reader r = or_throw(trace_reader::open(s.trace));
  replay_options o;
  o.target = s.target;
  o.maps = {or_throw(parse_map("/data=" + mapped))};
  const std::string before = list_outside(s);
  const auto out = or_throw(run_replay(r, o));
  CHECK(out.report.prepare.errors == 1);
  struct stat st;
  CHECK(::stat((mapped + "/f").c_str(), &st) == 0);
  CHECK(::stat((s.target + "/other/h").c_str(), &st) == 0);
  // Only the mapped file appeared outside the target.
  CHECK(list_outside(s) == before + "./mapped/f\n");
}

TEST_CASE("map rules are checked") {
  CHECK(or_throw(parse_map("/a=/b")).from == "/a");
  CHECK(or_throw(parse_map("/a/=/b")).from == "/a");
  CHECK_THROWS_WITH(or_throw(parse_map("a=/b")), Catch::Contains("FROM must be an absolute path"));
  CHECK_THROWS_WITH(or_throw(parse_map("/a/../b=/c")), Catch::Contains("without '.' or '..'"));
  CHECK_THROWS_WITH(or_throw(parse_map("/a")), Catch::Contains("expected FROM=TO"));
  CHECK_THROWS_WITH(or_throw(parse_map("/a=")), Catch::Contains("expected FROM=TO"));
}

TEST_CASE("a map made in code, not parsed, is held to the same rule") {
  // compare maps the directories a trace names; a trace may name "/data/../etc"
  sandbox s;
  for (const char* from : {"/data/../etc", "/data/./x", "data", "//x"}) {
    INFO(from);
    CHECK_THROWS_WITH(or_throw(target_root::open(s.target, {map_rule{from, s.target}})),
                      Catch::Contains("not an absolute path of plain names"));
  }
  CHECK(plain_path("/"));
  CHECK(plain_path("/data/src"));
  CHECK_FALSE(plain_path("/data/.."));
  CHECK_FALSE(plain_path(""));
}

TEST_CASE("a directory chain 2000 deep replays and verifies on a 512 KiB stack") {
  // Paths, their resolution, the end state and its teardown all went by recursion, one
  // frame a component.
  test::temp_dir tmp("/dev/shm");
  const std::string trace = tmp / "deep.trace";
  std::string deep;
  {
    test::trace_builder b(trace);
    const thread_id t = b.thread(100, 100, 1);
    for (int i = 0; i < 2000; ++i) {
      deep += "/d";
      b.tree_dir(deep);
    }
    b.tree_file(deep + "/f", 10);
    event& o = b.next(t, op::openat, 3);
    o.path = b.path(deep + "/g");
    o.file = b.file(7);
    o.flags = O_WRONLY | O_CREAT;
    event& w = b.next(t, op::write, 5);
    w.fd = 3, w.file = b.file(7), w.size = 5;
    event& c = b.next(t, op::close, 0);
    c.fd = 3, c.file = b.file(7);
    b.finish();
  }
  REQUIRE(deep.size() == 4000);
  const std::string target = tmp / "target";
  REQUIRE(::mkdir(target.c_str(), 0755) == 0);
  const auto log = [&] {
    std::ifstream in(tmp / "log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const auto small_stack = [&](const std::string& cmd) {
    return test::run(fmt::format("sh -c 'ulimit -s 512 && {} >{} 2>&1'", cmd, tmp / "log"));
  };
  CHECK(small_stack(fmt::format("{} replay {} {} --timing afap --no-progress", FSRR_BIN, trace,
                                target)) == 0);
  INFO(log());
  CHECK(small_stack(fmt::format("{} verify {} {} --content", FSRR_BIN, trace, target)) == 0);
  INFO(log());
  CHECK(small_stack(fmt::format("{} info {} --json", FSRR_BIN, trace)) == 0);
}

TEST_CASE("an open of a FIFO in the target returns, whatever type the trace gives the file") {
  // engine_fuzz's first hang: the tree makes /p a FIFO, the events open it for reading as a
  // regular file; the replay's open waited in the kernel for a writer that never comes.
  sandbox s;
  {
    test::trace_builder b(s.trace);
    const thread_id t = b.thread(100, 100, 1);
    tree_entry p;
    p.path = b.path("/p");
    p.mode = S_IFIFO | 0644;
    b.writer().add_tree_entry(p);
    const file_id lie = b.file(9, S_IFREG);
    event& o = b.next(t, op::openat, 3);
    o.path = b.path("/p");
    o.file = lie;
    o.flags = O_RDONLY;
    event& g = b.next(t, op::fcntl, O_RDONLY);
    g.fd = 3, g.file = lie, g.aux = F_GETFL;
    b.next(t, op::close).fd = 3;
    b.finish();
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const auto out = replay(s);
    ::_exit(out.report.replay.mismatches == 0 ? 0 : 1);
  }
  int status = -1;
  for (int i = 0; i < 1000 && ::waitpid(child, &status, WNOHANG) == 0; ++i) ::usleep(10'000);
  if (::waitpid(child, &status, WNOHANG) == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL("the replay still waits in open(2) after 10 s");
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // open returned 3 as recorded; F_GETFL says O_RDONLY
}

// export --shell writes a script that runs as root on someone's machine: it must name nothing
// beyond its TARGET, whatever the trace says.
TEST_CASE("export --shell of a hostile trace: the script names nothing outside its TARGET") {
  sandbox s;
  REQUIRE(std::system(fmt::format("echo keep > {}", s.outside / "victim").c_str()) == 0);
  {
    test::trace_builder b(s.trace);
    b.tree_dir("/x");
    b.tree_symlink("/x/abs", s.outside.path());
    b.tree_symlink("/x/rel", "../../..");
    b.tree_file("/x/abs/evil-in-tree", 5);
    const thread_id t = b.thread(100, 100, 1);
    // through the tree's symlinks
    event& o = b.next(t, op::openat, 3);
    o.path = b.path("/x/abs/evil");
    o.flags = O_WRONLY | O_CREAT | O_TRUNC;
    event& w = b.next(t, op::write, 5);
    w.fd = 3;
    w.size = 5;
    b.next(t, op::close, 0).fd = 3;
    b.next(t, op::mkdir, 0).path = b.path("/x/rel/evil-rel");
    // a symlink the ops make, then followed
    event& l = b.next(t, op::symlink, 0);
    l.path = b.path("/x/made");
    l.aux = b.str(s.outside.path());
    b.next(t, op::mkdir, 0).path = b.path("/x/made/evil-made");
    // a directory holding a symlink, renamed, then followed through its new name
    b.tree_dir("/x/d");
    b.tree_symlink("/x/d/link", s.outside.path());
    event& mv = b.next(t, op::rename, 0);
    mv.path = b.path("/x/d");
    mv.path2 = b.path("/x/e");
    b.next(t, op::mkdir, 0).path = b.path("/x/e/link/evil-moved");
    // a symlink the ops make to a file outside, opened O_NOFOLLOW (which bash cannot say:
    // its redirections follow)
    event& l2 = b.next(t, op::symlink, 0);
    l2.path = b.path("/x/to-file");
    l2.aux = b.str(s.outside / "victim");
    event& nf = b.next(t, op::openat, 4);
    nf.path = b.path("/x/to-file");
    nf.flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW;
    event& nw = b.next(t, op::write, 5);
    nw.fd = 4;
    nw.size = 5;
    // names that are not names
    b.next(t, op::mkdir, 0).path = b.path("/x/../../evil-up");
    event& r = b.next(t, op::rename, 0);
    r.path = b.path("/x/fine-not-yet");
    r.path2 = b.path("/x/../../evil-renamed");
    // and one that is fine
    b.next(t, op::mkdir, 0).path = b.path("/x/fine");
    b.finish();
  }
  const std::string script = s.outside / "repro.sh";
  REQUIRE(std::system(fmt::format("{} export {} --shell {} >/dev/null 2>&1", FSRR_BIN, s.trace, script)
                          .c_str()) == 0);
  const std::string before = list_outside(s);
  CHECK(std::system(fmt::format("bash {} {} >/dev/null 2>&1", script, s.target).c_str()) == 0);
  CHECK(list_outside(s) == before);
  struct stat st;
  {
    std::ifstream victim(s.outside / "victim");
    const std::string kept((std::istreambuf_iterator<char>(victim)), std::istreambuf_iterator<char>());
    CHECK(kept == "keep\n");  // untouched
  }
  CHECK(::stat((s.target + "/x/fine").c_str(), &st) == 0);
  CHECK(::lstat((s.target + "/x/made").c_str(), &st) == 0);  // the link itself is made
  // each refused line says why
  std::string text;
  {
    FILE* f = std::fopen(script.c_str(), "r");
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
    std::fclose(f);
  }
  size_t refused = 0;
  for (size_t at = 0; (at = text.find("its path is not one a script can confine", at)) != std::string::npos; ++at)
    ++refused;
  CHECK(refused == 7);  // two opens, four mkdirs, the rename
  CHECK(text.find("not made: /x/abs/evil-in-tree") != std::string::npos);
}
