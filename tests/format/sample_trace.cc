#include "sample_trace.h"
#include "trace_error.h"

#include <sys/stat.h>

namespace fsrr::test {

header_info sample_header() {
  header_info h;
  h.writer = "fsrr test";
  h.kind = trace_kind::recording;
  h.clock_monotonic_ns = 1000;
  h.clock_realtime_ns = 1700000000000000000;
  h.hostname = "testhost";
  h.kernel = "6.18.0";
  h.command = {"cp", "-a", "/src", "/dst"};
  h.page_size = 4096;
  h.cpus = 2;
  return h;
}

sample write_sample(const std::string& path, const writer_options& options, bool finish) {
  trace_writer w = or_throw(trace_writer::create(path, sample_header(), options));
  sample s;
  const string_id comm = w.intern_string("cp");
  const thread_id t1 = w.add_thread({100, 100, 1, comm, 1});
  const thread_id t2 = w.add_thread({101, 100, 1, comm, 1});
  const thread_id t3 = w.add_thread({200, 200, 100, w.intern_string("cat"), 2});
  const thread_id threads[] = {t1, t2, t3};

  // Every op once, threads round-robin, times increasing per thread but interleaved.
  uint64_t ts[4] = {0, 5000, 5100, 5200};
  for (size_t i = 0; i < op_count; ++i) {
    const op o = static_cast<op>(i);
    event e;
    e.kind = o;
    const size_t ti = i % 3;
    e.thread = threads[ti];
    e.ts = ts[ti + 1];
    e.dur = 100 + i;
    ts[ti + 1] += 1000 + 37 * i;
    e.result = static_cast<int64_t>(i % 5) - 2;  // failures and successes
    if (has(o, F_FD)) e.fd = 3 + static_cast<int32_t>(i % 7);
    if (has(o, F_FD2)) e.fd2 = 10 + static_cast<int32_t>(i % 3);
    const std::string p = "/src/dir" + std::to_string(i % 4) + "/file" + std::to_string(i);
    if (has(o, F_PATH)) e.path = w.intern_path(p);
    if (has(o, F_PATH2)) e.path2 = w.intern_path(p + ".renamed");
    if (has(o, F_FILE)) e.file = w.intern_file({8, 1000 + i, 7, S_IFREG});
    if (has(o, F_FILE2)) e.file2 = w.intern_file({8, 5000 + i, 1, S_IFREG});
    if (has(o, F_OFFSET)) e.offset = static_cast<int64_t>(4096 * i);
    if (has(o, F_OFFSET2)) e.offset2 = -static_cast<int64_t>(i);
    if (has(o, F_SIZE)) e.size = 131072 + i;
    if (has(o, F_FLAGS)) e.flags = 0x8000 | static_cast<uint32_t>(i);
    if (has(o, F_MODE)) e.mode = 0644;
    if (has(o, F_AUX)) e.aux = w.intern_string("user.aux" + std::to_string(i));
    if (has(o, F_VIA) && i % 3)  // a syscall, an io_uring request, an AIO one
      e.via = make_via(i % 3 == 1 ? engine::io_uring : engine::aio, 1 + i % 4,
                       i % 3 == 1 ? sqe_link | sqe_fixed_file : 0);
    w.append(e);
    round_times(e, options.time_unit_ns);  // as the writer stores it
    s.events.push_back(e);
    s.paths.push_back(has(o, F_PATH) ? p : "");
  }
  // A sequential read loop, the common case the column predictions are made for.
  const file_id big = w.intern_file({8, 42, 1, S_IFREG});
  for (int k = 0; k < 200; ++k) {
    event e;
    e.kind = op::read;
    e.thread = t1;
    e.ts = ts[1];
    e.dur = 2000;
    ts[1] += 2500;
    e.fd = 3;
    e.file = big;
    e.offset = 131072 * k;
    e.size = 131072;
    e.result = k == 199 ? 17 : 131072;
    w.append(e);
    round_times(e, options.time_unit_ns);  // as the writer stores it
    s.events.push_back(e);
    s.paths.push_back("");
  }

  auto entry = [&](const std::string& p, uint32_t mode, uint64_t size) {
    tree_entry t;
    t.path = w.intern_path(p);
    t.mode = mode;
    t.uid = 1000;
    t.gid = 1000;
    t.size = size;
    t.allocated = (size + 4095) / 4096 * 4096;
    t.atime_ns = 1700000000123456789;
    t.mtime_ns = 1700000001123456789;
    t.ctime_ns = 1700000002123456789;
    return t;
  };
  s.tree.push_back(entry("/src", S_IFDIR | 0755, 4096));
  auto f = entry("/src/a.txt", S_IFREG | 0640, 1234);
  f.xattrs = {{w.intern_string("user.comment"), 12}, {w.intern_string("user.tag"), 0}};
  s.tree.push_back(f);
  auto sparse = entry("/src/sparse.img", S_IFREG | 0600, 1 << 30);
  sparse.allocated = 8192;
  sparse.extents = {{0, 4096}, {1 << 29, 4096}};
  s.tree.push_back(sparse);
  auto l = entry("/src/link", S_IFLNK | 0777, 5);
  l.target = w.intern_string("a.txt");
  s.tree.push_back(l);
  auto h1 = entry("/src/h1", S_IFREG | 0644, 10);
  h1.nlink = 2;
  h1.link_group = 1;
  auto h2 = h1;
  h2.path = w.intern_path("/src/h2");
  s.tree.push_back(h1);
  s.tree.push_back(h2);
  s.tree.push_back(entry("/src/fifo", S_IFIFO | 0600, 0));
  for (const auto& t : s.tree) w.add_tree_entry(t);

  w.add_lost(0, 3);
  w.add_lost(1, 4);
  w.add_nonfile(op::write, fd_kind::pipe, 9);
  w.add_nonfile(op::read, fd_kind::socket, 2);
  w.mark_incomplete(incomplete_io_uring);
  w.add_clock_pair(2000, 1700000000000001000);
  if (finish) or_throw(w.finish());
  return s;
}

}  // namespace fsrr::test
