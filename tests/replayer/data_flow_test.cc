// The data flow: which bytes each write puts into a file, worked out from the events alone.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <vector>

#include <catch2/catch.hpp>

#include "data_flow.h"
#include "fd_map.h"
#include "prepare.h"
#include "temp_dir.h"
#include "trace_builder.h"
#include "trace_error.h"
#include "trace_reader.h"

using namespace fsrr;

namespace {

using pieces = std::vector<source_piece>;

pieces of(const source_list& l) { return {l.begin(), l.end()}; }

// The trace replayed through fd_map and data_flow, as the engine and verify do.
struct flow_run {
  trace_reader reader;
  fd_map fds;
  data_flow flow;
  explicit flow_run(const std::string& trace)
      : reader(or_throw(trace_reader::open(trace))), fds(threads(reader)), flow(reader) {
    fd_effect fx;
    auto events = reader.events();
    for (event e; events.next(e);) {
      fds.apply(e, fx);
      flow.apply(e, fx, fds);
    }
    or_throw(events.status());
  }
  static std::vector<thread_info> threads(trace_reader& r) {
    std::vector<thread_info> v(r.thread_count() + 1);
    for (thread_id t = 1; t < v.size(); ++t) v[t] = r.thread(t);
    return v;
  }
  pieces content(file_id f) {
    source_list l;
    flow.pieces_of(f, 0, flow.size_of(f), l);
    return of(l);
  }
};

// open, then each op of `sizes` at consecutive offsets, then close: a thread reading or
// writing a file start to end.
void sweep(test::trace_builder& b, thread_id t, const std::string& path, file_id f, int fd,
           op kind, std::vector<uint64_t> sizes, uint32_t flags = O_RDONLY) {
  event& o = b.next(t, op::openat, fd);
  o.path = b.path(path);
  o.file = f;
  o.flags = flags;
  uint64_t at = 0;
  for (uint64_t n : sizes) {
    event& e = b.next(t, kind, static_cast<int64_t>(n));
    e.fd = fd;
    e.file = f;
    e.offset = static_cast<int64_t>(at);
    e.size = n;
    at += n;
  }
  event& c = b.next(t, op::close, 0);
  c.fd = fd;
  c.file = f;
}

void stream_op(test::trace_builder& b, thread_id t, op kind, int fd, file_id s, uint64_t n) {
  event& e = b.next(t, kind, static_cast<int64_t>(n));
  e.fd = fd;
  e.file = s;
  e.size = n;
  e.aux = static_cast<uint64_t>(kind == op::stream_write ? op::write : op::read);
}

}  // namespace

TEST_CASE("a content map keeps what was written where, holes as zeros") {
  content_map m;
  source_list a, b;
  a.add({7, 0, 100});
  m.write(0, a);
  b.add({9, 500, 10});
  m.write(40, b);  // over the middle
  source_list got;
  m.read(0, 200, got);
  CHECK(of(got) == pieces{{7, 0, 40}, {9, 500, 10}, {7, 50, 50}});
  m.resize(130);  // grows with zeros
  got.clear();
  m.read(90, 100, got);
  CHECK(of(got) == pieces{{7, 90, 10}, {zero_key, 0, 30}});
  m.zero(0, 45);
  got.clear();
  m.read(0, 60, got);
  CHECK(of(got) == pieces{{zero_key, 0, 45}, {9, 505, 5}, {7, 50, 10}});
  m.resize(20);
  CHECK(m.size() == 20);
  CHECK(m.extents() == 0);
}

TEST_CASE("a copy in one thread writes what it read, past the configuration it read first") {
  test::temp_dir tmp;
  const std::string trace = tmp / "t.trace";
  test::trace_builder b(trace);
  const thread_id t = b.thread(100, 100, 1);
  const file_id conf = b.file(1), src = b.file(2), dst = b.file(3);
  b.tree_file("/etc/locale.alias", 2996, 0644, conf);
  b.tree_file("/data/a", 300000, 0644, src);
  b.tree_dir("/data");
  sweep(b, t, "/etc/locale.alias", conf, 3, op::read, {2996});
  sweep(b, t, "/data/a", src, 3, op::read, {131072, 131072, 37856});
  sweep(b, t, "/backup/a", dst, 4, op::write, {100000, 200000}, O_WRONLY | O_CREAT);
  b.finish();
  flow_run r(trace);
  CHECK(r.content(dst) == pieces{{content_key(b.path("/data/a")), 0, 300000}});
  CHECK(r.flow.stats().copied == 300000);
  CHECK(r.flow.stats().generated == 0);
  CHECK(r.flow.stats().dropped == 2996);
}

TEST_CASE("through a pipe: each file written from the reads of the file of its size") {
  // tar c reads its configuration and two files of 5000 bytes and one of 7000 and writes
  // records into a pipe; tar x reads the pipe and writes three files, in that order
  test::temp_dir tmp;
  const std::string trace = tmp / "t.trace";
  test::trace_builder b(trace);
  const thread_id c = b.thread(100, 100, 1), x = b.thread(200, 200, 2);
  const file_id pipe = b.file(99, S_IFIFO);
  const file_id passwd = b.file(1), f1 = b.file(2), f2 = b.file(3), f3 = b.file(4);
  const file_id d1 = b.file(12), d2 = b.file(13), d3 = b.file(14);
  b.tree_file("/etc/passwd", 1221, 0644, passwd);
  b.tree_file("/s/one", 5000, 0644, f1);
  b.tree_file("/s/two", 5000, 0644, f2);
  b.tree_file("/s/big", 7000, 0644, f3);
  sweep(b, c, "/etc/passwd", passwd, 3, op::read, {1221});
  sweep(b, c, "/s/one", f1, 4, op::read, {5000});
  stream_op(b, c, op::stream_write, 1, pipe, 10240);
  stream_op(b, x, op::stream_read, 0, pipe, 10240);
  sweep(b, c, "/s/two", f2, 4, op::read, {5000});
  sweep(b, c, "/s/big", f3, 4, op::read, {7000});
  stream_op(b, c, op::stream_write, 1, pipe, 10240);
  sweep(b, x, "/d/one", d1, 3, op::write, {5000}, O_WRONLY | O_CREAT);
  stream_op(b, x, op::stream_read, 0, pipe, 10240);
  sweep(b, x, "/d/two", d2, 3, op::write, {5000}, O_WRONLY | O_CREAT);
  stream_op(b, c, op::stream_write, 1, pipe, 2048);
  sweep(b, x, "/d/big", d3, 3, op::write, {4096, 2904}, O_WRONLY | O_CREAT);
  b.finish();
  flow_run r(trace);
  CHECK(r.content(d1) == pieces{{content_key(b.path("/s/one")), 0, 5000}});
  CHECK(r.content(d2) == pieces{{content_key(b.path("/s/two")), 0, 5000}});
  CHECK(r.content(d3) == pieces{{content_key(b.path("/s/big")), 0, 7000}});
  CHECK(r.flow.stats().copied == 17000);
  CHECK(r.flow.stats().pipe_bytes == 22528);
  CHECK(r.flow.stats().dropped == 1221);
}

TEST_CASE("read N, write N: a concatenation, and zeros from /dev/zero") {
  test::temp_dir tmp;
  const std::string trace = tmp / "t.trace";
  test::trace_builder b(trace);
  const thread_id t = b.thread(100, 100, 1);
  const file_id a = b.file(1), bb = b.file(2), c = b.file(3), z = b.file(4), u = b.file(5);
  const file_id zero = b.writer().intern_file({makedev(1, 5), 0, 0, S_IFCHR});
  const file_id urandom = b.writer().intern_file({makedev(1, 9), 0, 0, S_IFCHR});
  b.tree_file("/a", 1000, 0644, a);
  b.tree_file("/b", 600, 0644, bb);
  // cat a b > c: read, write, read, write
  event& o = b.next(t, op::openat, 4);
  o.path = b.path("/c");
  o.file = c;
  o.flags = O_WRONLY | O_CREAT;
  uint64_t at = 0;
  for (auto [f, n, fd] : {std::tuple{a, 1000, 3}, std::tuple{bb, 600, 5}}) {
    event& op_ = b.next(t, op::openat, fd);
    op_.path = b.path(f == a ? "/a" : "/b");
    op_.file = f;
    event& rd = b.next(t, op::read, n);
    rd.fd = fd;
    rd.file = f;
    rd.size = 131072;
    event& wr = b.next(t, op::write, n);
    wr.fd = 4;
    wr.file = c;
    wr.offset = static_cast<int64_t>(at);
    wr.size = static_cast<uint64_t>(n);
    at += static_cast<uint64_t>(n);
  }
  // dd if=/dev/zero of=z bs=4096 count=2; dd if=/dev/urandom of=u bs=512 count=1
  event& oz = b.next(t, op::openat, 6);
  oz.path = b.path("/z");
  oz.file = z;
  oz.flags = O_WRONLY | O_CREAT;
  for (int i = 0; i < 2; ++i) {
    stream_op(b, t, op::stream_read, 7, zero, 4096);
    event& w = b.next(t, op::write, 4096);
    w.fd = 6, w.file = z, w.offset = 4096 * i, w.size = 4096;
  }
  event& ou = b.next(t, op::openat, 8);
  ou.path = b.path("/u");
  ou.file = u;
  ou.flags = O_WRONLY | O_CREAT;
  stream_op(b, t, op::stream_read, 9, urandom, 512);
  event& w = b.next(t, op::write, 512);
  w.fd = 8, w.file = u, w.offset = 0, w.size = 512;
  b.finish();
  flow_run r(trace);
  CHECK(r.content(c) ==
        pieces{{content_key(b.path("/a")), 0, 1000}, {content_key(b.path("/b")), 0, 600}});
  CHECK(r.content(z) == pieces{{zero_key, 0, 8192}});
  // fresh: the bytes of the handle (opened as /u) at their offset
  CHECK(r.content(u) == pieces{{content_key(b.path("/u")), 0, 512}});
  CHECK(r.flow.stats().copied == 1600);
  CHECK(r.flow.stats().zeros == 8192);
  CHECK(r.flow.stats().generated == 512);
  CHECK(r.flow.stats().device_bytes == 8704);
}

TEST_CASE("writes that do not line up with what was read are fresh, and counted as unmatched") {
  test::temp_dir tmp;
  const std::string trace = tmp / "t.trace";
  test::trace_builder b(trace);
  const thread_id t = b.thread(100, 100, 1), other = b.thread(300, 300, 3);
  const file_id src = b.file(1), out = b.file(2), log = b.file(3);
  const file_id stdin_pipe = b.file(50, S_IFIFO);
  b.tree_file("/in.c", 30000, 0644, src);
  // a compiler: reads its source, writes an object of another size in other pieces
  sweep(b, t, "/in.c", src, 3, op::read, {30000, 0});
  sweep(b, t, "/out.o", out, 4, op::write, {4096, 4096, 1000}, O_WRONLY | O_CREAT);
  // a program reading stdin from a process outside the trace, writing it to a log
  stream_op(b, other, op::stream_read, 0, stdin_pipe, 700);
  sweep(b, other, "/log", log, 3, op::write, {700}, O_WRONLY | O_CREAT);
  b.finish();
  flow_run r(trace);
  CHECK(r.content(out) == pieces{{content_key(b.path("/out.o")), 0, 9192}});
  CHECK(r.flow.stats().copied == 0);
  CHECK(r.flow.stats().unmatched_sizes == 9192);
  CHECK(r.flow.stats().unmatched_no_writer == 700);
  CHECK(r.content(log) == pieces{{content_key(b.path("/log")), 0, 700}});
}

TEST_CASE("copy_file_range at the fds' positions copies in the model as in the kernel") {
  test::temp_dir tmp;
  const std::string trace = tmp / "t.trace";
  test::trace_builder b(trace);
  const thread_id t = b.thread(100, 100, 1);
  const file_id src = b.file(1), dst = b.file(2);
  b.tree_file("/a", 100000, 0644, src);
  event& o1 = b.next(t, op::openat, 3);
  o1.path = b.path("/a"), o1.file = src;
  event& o2 = b.next(t, op::openat, 4);
  o2.path = b.path("/b"), o2.file = dst, o2.flags = O_WRONLY | O_CREAT;
  for (uint64_t n : {65536, 34464}) {
    event& c = b.next(t, op::copy_file_range, static_cast<int64_t>(n));
    c.fd = 3, c.fd2 = 4, c.file = src, c.file2 = dst, c.offset = -1, c.offset2 = -1;
    c.size = 1 << 30;
  }
  b.finish();
  flow_run r(trace);
  CHECK(r.content(dst) == pieces{{content_key(b.path("/a")), 0, 100000}});
  CHECK(r.flow.stats().in_kernel == 100000);
}
