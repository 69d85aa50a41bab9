// A trace copied through the rewriter: what comes out is what went in, renamed where the
// hooks say so.
#include <fcntl.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "describe.h"
#include "rewrite.h"
#include "temp_dir.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;
using namespace fsrr::transform;

namespace {

// cp -a of one file with an xattr, a symlink made, and the counters a recorder leaves.
void write_sample(const std::string& path) {
  test::trace_builder b(path);
  const thread_id t = b.thread(100, 100, 1);
  b.tree_dir("/src");
  b.tree_file("/src/a", 5000);
  event& o = b.next(t, op::openat, 3);
  o.path = b.path("/src/a");
  o.file = b.file(1);
  event& c = b.next(t, op::openat, 4);
  c.path = b.path("/dst/a");
  c.file = b.file(2);
  c.flags = O_WRONLY | O_CREAT;
  event& r = b.next(t, op::copy_file_range, 5000);
  r.fd = 3, r.fd2 = 4, r.file = b.file(1), r.file2 = b.file(2), r.offset = -1, r.offset2 = -1;
  r.size = 1 << 30;
  event& x = b.next(t, op::fsetxattr, 0);
  x.fd = 4, x.file = b.file(2), x.aux = b.str("user.origin"), x.size = 5;
  event& s = b.next(t, op::symlink, 0);
  s.path = b.path("/dst/link");
  s.aux = b.str("a");
  b.writer().add_nonfile(op::write, fd_kind::pipe, 7);
  b.writer().add_lost(0, 3);
  b.writer().add_clock_pair(1000, 2000);
  b.finish();
}

std::vector<std::string> lines(trace_reader& r) {
  std::vector<std::string> v;
  for (const auto& e : r.tree()) v.push_back(r.path_string(e.path));
  auto events = r.events();
  for (event e; events.next(e);) v.push_back(describe(r, e));
  or_throw(events.status());
  return v;
}

}  // namespace

TEST_CASE("a trace rewritten without hooks reads as the original") {
  test::temp_dir tmp;
  write_sample(tmp / "in.trace");
  trace_reader in = or_throw(trace_reader::open(tmp / "in.trace"));
  {
    auto w = or_throw(trace_rewriter::create(in, tmp / "out.trace", in.header(), false));
    for (const auto& e : in.tree()) w.add_tree_entry(e);
    auto events = in.events();
    for (event e; events.next(e);) w.append(e);
    or_throw(events.status());
    w.copy_counters();
    or_throw(w.finish());
  }
  trace_reader out = or_throw(trace_reader::open(tmp / "out.trace"));
  CHECK(lines(out) == lines(in));
  CHECK(out.summary().nonfile == in.summary().nonfile);
  CHECK(out.summary().lost_events == 3);
  CHECK(out.clock_pairs() == in.clock_pairs());
  CHECK(out.summary().bytes_written == 5000);
}

TEST_CASE("the hooks rename path components and strings by their role") {
  test::temp_dir tmp;
  write_sample(tmp / "in.trace");
  trace_reader in = or_throw(trace_reader::open(tmp / "in.trace"));
  rewrite_hooks h;
  h.name = [](path_id, path_id, std::string_view n) { return std::string(n) + "_"; };
  h.text = [](string_role role, std::string_view s, path_id) {
    return role == string_role::xattr_name ? std::string("user.renamed") : std::string(s);
  };
  {
    auto w = or_throw(trace_rewriter::create(in, tmp / "out.trace", in.header(), false, h));
    for (const auto& e : in.tree()) w.add_tree_entry(e);
    auto events = in.events();
    for (event e; events.next(e);) w.append(e);
    or_throw(events.status());
    or_throw(w.finish());
  }
  trace_reader out = or_throw(trace_reader::open(tmp / "out.trace"));
  const auto l = lines(out);
  CHECK(l[0] == "/src_");
  CHECK(l[1] == "/src_/a_");
  CHECK(l[3].find("\"/dst_/a_\"") != std::string::npos);
  CHECK(l[5].find("\"user.renamed\"") != std::string::npos);
  // a symlink's target is a link_target string: the hook left it as it was
  CHECK(l[6].find("\"/dst_/link_\", \"a\"") != std::string::npos);
}

TEST_CASE("a rewriter given up on before finish leaves no output behind") {
  test::temp_dir tmp;
  write_sample(tmp / "in.trace");
  trace_reader in = or_throw(trace_reader::open(tmp / "in.trace"));
  {
    auto w = or_throw(trace_rewriter::create(in, tmp / "out.trace", in.header(), false));
    for (const auto& e : in.tree()) w.add_tree_entry(e);
    w.writer().flush();  // a block on disk: what a transform that fails midway has written
    struct stat st;
    REQUIRE(::stat((tmp / "out.trace").c_str(), &st) == 0);
    CHECK(st.st_size > 0);
  }  // the error return of a transform: no finish()
  struct stat st;
  CHECK(::stat((tmp / "out.trace").c_str(), &st) != 0);
  CHECK(errno == ENOENT);
}

TEST_CASE("a rewriter that cannot finish says why and removes its output") {
  test::temp_dir tmp;
  write_sample(tmp / "in.trace");
  trace_reader in = or_throw(trace_reader::open(tmp / "in.trace"));
  rewrite_hooks h;  // a name no path may hold
  h.name = [](path_id, path_id, std::string_view n) { return std::string(n) + "/x"; };
  auto w = or_throw(trace_rewriter::create(in, tmp / "out.trace", in.header(), false, h));
  for (const auto& e : in.tree()) w.add_tree_entry(e);
  const auto finished = w.finish();
  REQUIRE_FALSE(finished);
  CHECK(finished.error().message == "path 2: a name no path may hold: 'src/x'");
  struct stat st;
  CHECK(::stat((tmp / "out.trace").c_str(), &st) != 0);
  CHECK(errno == ENOENT);
}

TEST_CASE("a rewritten trace keeps its input's time unit: a trace of nanoseconds stays one") {
  test::temp_dir tmp;
  writer_options ns;
  ns.time_unit_ns = 1;
  {
    header_info h;
    h.writer = "test";
    trace_writer w = or_throw(trace_writer::create(tmp / "in.trace", h, ns));
    event e;
    e.kind = op::close;
    e.thread = w.add_thread({7, 7, 1, w.intern_string("sh"), 1});
    e.fd = 3;
    e.ts = 1001;
    e.dur = 7;
    w.append(e);
    or_throw(w.finish());
  }
  trace_reader in = or_throw(trace_reader::open(tmp / "in.trace"));
  REQUIRE(in.header().time_unit_ns == 1);
  {
    auto w = or_throw(trace_rewriter::create(in, tmp / "out.trace", in.header(), false));
    auto events = in.events();
    for (event e; events.next(e);) w.append(e);
    or_throw(w.finish());
  }
  trace_reader out = or_throw(trace_reader::open(tmp / "out.trace"));
  CHECK(out.header().time_unit_ns == 1);
  CHECK(out.header().format_major == 1);
  auto events = out.events();
  event e;
  REQUIRE(events.next(e));
  CHECK(e.ts == 1001);
  CHECK(e.dur == 7);
}
