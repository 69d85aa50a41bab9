#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include <catch2/catch.hpp>

#include "describe.h"
#include "loop_fs.h"
#include "sample_trace.h"
#include "temp_dir.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;

namespace {

std::vector<event> time_order(std::vector<event> v) {
  std::stable_sort(v.begin(), v.end(), [](const event& a, const event& b) {
    // as the reader merges threads (no thread of the sample has two events at one time)
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur != b.dur ? a.dur < b.dur : a.thread < b.thread;
  });
  return v;
}

std::vector<event> read_all(trace_reader& r) {
  std::vector<event> out;
  auto s = r.events();
  event e;
  while (s.next(e)) out.push_back(e);
  or_throw(s.status());
  return out;
}

}  // namespace

TEST_CASE("every op and field survives a round trip, in time order") {
  test::temp_dir dir;
  writer_options small;
  small.chunk_events = 16;  // many blocks, threads split across them
  for (const auto& opt : {writer_options{}, small}) {
    const std::string path = dir / (opt.chunk_events == 16 ? "small.trace" : "big.trace");
    const auto s = test::write_sample(path, opt);
    trace_reader r = or_throw(trace_reader::open(path));
    const auto got = read_all(r);
    const auto want = time_order(s.events);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("event " << i << " op " << name(want[i].kind));
      CHECK(got[i] == want[i]);
    }
    CHECK(r.complete() == false);  // lost events and io_uring were recorded
    CHECK(r.has_footer());
    CHECK(r.damage().empty());
  }
}

TEST_CASE("ops added later follow the old ones: existing op codes keep their meaning") {
  CHECK(static_cast<size_t>(op::fd_bind) == 103);
  const op added[] = {op::setxattrat,    op::getxattrat,   op::listxattrat,
                      op::removexattrat, op::file_getattr, op::file_setattr};
  for (size_t i = 0; i < std::size(added); ++i) {
    CHECK(static_cast<size_t>(added[i]) == 104 + i);
    CHECK(op_from_name(name(added[i])) == added[i]);
  }
  CHECK(static_cast<size_t>(op::stream_write) == 110);
  CHECK(static_cast<size_t>(op::stream_read) == 111);
  CHECK(static_cast<size_t>(op::bind) == 112);
  CHECK(op_from_name("bind") == op::bind);
  CHECK(op_count == 114);
}

TEST_CASE("the *xattrat and file_*attr calls come back with their fields and print as syscalls") {
  test::temp_dir dir;
  const std::string path = dir / "t.trace";
  std::vector<event> want;
  {
    trace_writer w = or_throw(trace_writer::create(path, test::sample_header()));
    const thread_id t = w.add_thread({7, 7, 1, w.intern_string("setfattr"), 1});
    const path_id x = w.intern_path("/d/x.txt");
    const file_id f = w.intern_file({8, 12, 0, S_IFREG});
    const string_id acl = w.intern_string("system.posix_acl_access");
    const string_id user = w.intern_string("user.a");
    auto add = [&](op kind, int64_t result) -> event& {
      event& e = want.emplace_back();
      e.kind = kind;
      e.thread = t;
      e.ts = 1024 * want.size();  // multiples of the writer's 16 ns
      e.dur = 512;
      e.result = result;
      e.path = x;
      e.file = f;
      return e;
    };
    event& set = add(op::setxattrat, 0);  // by path, XATTR_CREATE
    set.aux = acl, set.size = 28, set.flags = 0x1, set.mode = acl_mode_present | 0640;
    event& get = add(op::getxattrat, 5);  // on an fd, AT_EMPTY_PATH
    get.fd = 3, get.aux = user, get.size = 64, get.flags = 0x1000;
    event& list = add(op::listxattrat, 7);  // AT_SYMLINK_NOFOLLOW
    list.size = 100, list.flags = 0x100;
    add(op::removexattrat, -ENODATA).aux = user;
    add(op::file_getattr, 0).size = 24;
    event& fset = add(op::file_setattr, 0);
    fset.size = 24, fset.aux = 0x80;
    for (const event& e : want) w.append(e);
    or_throw(w.finish());
  }
  trace_reader r = or_throw(trace_reader::open(path));
  const auto got = read_all(r);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("op " << name(want[i].kind));
    CHECK(got[i] == want[i]);
  }
  auto args = [&](const event& e) {  // between the parentheses of the dump line
    const std::string line = describe(r, e);
    return line.substr(line.find('(') + 1, line.rfind(") = ") - line.find('(') - 1);
  };
  CHECK(args(got[0]) == R"(-1, "/d/x.txt", "system.posix_acl_access", 28, 0x1, 04000640)");
  CHECK(args(got[1]) == R"(3, "/d/x.txt", "user.a", 64, 0x1000)");
  CHECK(args(got[2]) == R"(-1, "/d/x.txt", 100, 0x100)");
  CHECK(args(got[3]) == R"(-1, "/d/x.txt", "user.a", 0x0)");
  CHECK(args(got[4]) == R"(-1, "/d/x.txt", 24, 0x0)");
  CHECK(args(got[5]) == R"(-1, "/d/x.txt", xflags=0x80, 24, 0x0)");
  CHECK(to_json(r, got[5])["xflags"] == 0x80);
  CHECK(to_json(r, got[1])["name"] == "user.a");
}

TEST_CASE("paths, files, threads and strings come back by id") {
  test::temp_dir dir;
  const auto s = test::write_sample(dir / "t.trace", {});
  trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
  for (size_t i = 0; i < s.events.size(); ++i)
    if (!s.paths[i].empty()) CHECK(r.path_string(s.events[i].path) == s.paths[i]);
  CHECK(r.path_string(root_path) == "/");
  CHECK(r.thread_count() == 3);
  CHECK(r.thread(1) == thread_info{100, 100, 1, 1, 1});
  CHECK(r.string(r.thread(3).comm) == "cat");
  CHECK(r.thread(3).fd_table == 2);
  const event& first_read = s.events[static_cast<size_t>(op::read)];
  CHECK(r.file(first_read.file) ==
        file_info{8, 1000 + static_cast<uint64_t>(op::read), 7, S_IFREG});
  // An id the trace does not have (a caller's bug) gets the empty entry, not a crash.
  const path_entry& none = r.path(static_cast<path_id>(r.path_count() + 1));
  CHECK(none.parent == no_id);
  CHECK(none.name.empty());
  CHECK(r.string(static_cast<string_id>(r.string_count() + 7)).empty());
}

TEST_CASE("the header comes back as written") {
  test::temp_dir dir;
  test::write_sample(dir / "t.trace", {});
  trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
  const auto want = test::sample_header();
  const auto& h = r.header();
  CHECK(h.format_major == format_major_units);  // times in 16 ns units
  CHECK(h.format_minor == format_minor);
  CHECK(h.writer == want.writer);
  CHECK(h.kind == trace_kind::recording);
  CHECK(h.clock_monotonic_ns == want.clock_monotonic_ns);
  CHECK(h.clock_realtime_ns == want.clock_realtime_ns);
  CHECK(h.hostname == want.hostname);
  CHECK(h.kernel == want.kernel);
  CHECK(h.command == want.command);
  CHECK(h.page_size == 4096);
  CHECK(h.cpus == 2);
  // the sample gives no trace id: the writer made one, 32 hex digits, another for the next
  REQUIRE(h.trace_id.size() == 32);
  CHECK(h.trace_id.find_first_not_of("0123456789abcdef") == std::string::npos);
  test::write_sample(dir / "u.trace", {});
  trace_reader u = or_throw(trace_reader::open(dir / "u.trace"));
  CHECK(u.header().trace_id.size() == 32);
  CHECK(u.header().trace_id != h.trace_id);
}

TEST_CASE("a trace id given to the writer is the trace's") {
  test::temp_dir dir;
  header_info h = test::sample_header();
  h.trace_id = "0123456789abcdef0123456789abcdef";
  {
    trace_writer w = or_throw(trace_writer::create(dir / "t.trace", h, {}));
    REQUIRE(w.finish());
  }
  trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
  CHECK(r.header().trace_id == "0123456789abcdef0123456789abcdef");
}

TEST_CASE("every tree entry kind survives a round trip") {
  test::temp_dir dir;
  writer_options opt;
  opt.tree_entries = 3;  // the tree spans blocks
  const auto s = test::write_sample(dir / "t.trace", opt);
  trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
  REQUIRE(r.tree().size() == s.tree.size());
  for (size_t i = 0; i < s.tree.size(); ++i) CHECK(r.tree()[i] == s.tree[i]);
  CHECK(r.path_string(r.tree()[2].path) == "/src/sparse.img");
  CHECK(r.string(r.tree()[3].target) == "a.txt");
  CHECK(r.string(r.tree()[1].xattrs[0].name) == "user.comment");
}

TEST_CASE("the summary from the footer equals the one recomputed without it") {
  test::temp_dir dir;
  const auto s = test::write_sample(dir / "closed.trace", {}, true);
  test::write_sample(dir / "killed.trace", {}, false);
  trace_reader closed = or_throw(trace_reader::open(dir / "closed.trace"));
  trace_reader killed = or_throw(trace_reader::open(dir / "killed.trace"));
  CHECK_FALSE(killed.has_footer());
  for (trace_reader* r : {&closed, &killed}) {
    const trace_summary& m = r->summary();
    CHECK(m.events == s.events.size());
    CHECK(m.lost_events == 7);
    CHECK(m.incomplete == incomplete_io_uring);
    CHECK(m.threads == 3);
    CHECK(m.processes == 2);
    CHECK(m.op_counts[static_cast<size_t>(op::read)] == 201);
    CHECK(m.op_counts[static_cast<size_t>(op::fsync)] == 1);
    // 199 full reads + 17 bytes, plus the one-off data ops whose result was positive.
    uint64_t read = 199 * 131072 + 17, written = 0;
    for (size_t i = 0; i < op_count; ++i) {
      const event& e = s.events[i];
      if (e.result <= 0) continue;
      const auto c = info(e.kind).cls;
      if (c == op_class::read || c == op_class::copy) read += e.result;
      if (c == op_class::write || c == op_class::copy) written += e.result;
    }
    CHECK(m.bytes_read == read);
    CHECK(m.bytes_written == written);
    CHECK(m.first_ts == 4992);  // thread 1 starts first, at 5000 ns, stored in 16 ns units
    CHECK(m.tree.files == 4);
    CHECK(m.tree.dirs == 1);
    CHECK(m.tree.symlinks == 1);
    CHECK(m.tree.other == 1);
    CHECK(m.tree.bytes == 1234 + (1ull << 30) + 10 + 10);
    CHECK(m.nonfile.at({op::write, fd_kind::pipe}) == 9);
    CHECK(m.nonfile.at({op::read, fd_kind::socket}) == 2);
  }
  CHECK(closed.summary().last_ts == killed.summary().last_ts);
  CHECK(closed.summary().op_counts == killed.summary().op_counts);
}

TEST_CASE("a trace file is created 0600 and never overwritten by accident") {
  test::temp_dir dir;
  test::write_sample(dir / "t.trace", {});
  struct stat st;
  REQUIRE(::stat((dir / "t.trace").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK_THROWS_WITH(test::write_sample(dir / "t.trace", {}),
                    Catch::Contains("exists; choose another name or remove it"));
  writer_options over;
  over.overwrite = true;
  CHECK_NOTHROW(test::write_sample(dir / "t.trace", over));
}

TEST_CASE("an empty trace, closed at once, reads as complete and empty") {
  test::temp_dir dir;
  {
    trace_writer w = or_throw(trace_writer::create(dir / "e.trace", test::sample_header()));
    or_throw(w.finish());
  }
  trace_reader r = or_throw(trace_reader::open(dir / "e.trace"));
  CHECK(r.complete());
  CHECK(r.summary().events == 0);
  CHECK(r.tree().empty());
  CHECK(r.path_string(root_path) == "/");
  event e;
  auto s = r.events();
  CHECK_FALSE(s.next(e));
}

TEST_CASE("events of one thread keep program order when timestamps tie") {
  test::temp_dir dir;
  std::vector<event> want;
  {
    writer_options opt;
    opt.chunk_events = 3;
    trace_writer w = or_throw(trace_writer::create(dir / "t.trace", test::sample_header(), opt));
    const thread_id a = w.add_thread({1, 1, 0, 0, 1});
    const thread_id b = w.add_thread({2, 1, 0, 0, 1});
    for (int i = 0; i < 10; ++i)
      for (thread_id t : {b, a}) {
        event e;
        e.kind = op::fsync;
        e.thread = t;
        e.ts = 100;  // all at once
        e.fd = i;
        w.append(e);
        want.push_back(e);
      }
    or_throw(w.finish());
  }
  trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
  auto got = read_all(r);
  REQUIRE(got.size() == 20);
  for (size_t i = 0; i < 10; ++i) {  // thread a (id 1) first at equal times, then b
    CHECK(got[i].thread == 1);
    CHECK(got[i].fd == static_cast<int>(i));
    CHECK(got[10 + i].thread == 2);
    CHECK(got[10 + i].fd == static_cast<int>(i));
  }
}

TEST_CASE(
    "a writer out of space stops at the refused write, says why, and leaves a readable prefix") {
  if (!test::require_root("mounting a small tmpfs needs root")) return;
  test::loop_fs fs("tmpfs", 1);  // 1 MiB
  const std::string path = fs.path() + "/t.trace";
  writer_options o;
  o.chunk_events = 1024;  // a block every 1024 events
  header_info h;
  h.writer = "test";
  trace_writer w = or_throw(trace_writer::create(path, h, o));
  const thread_id t = w.add_thread({1, 1, 0, w.intern_string("w"), 1});
  uint64_t x = 88172645463325252ull, appended = 0;  // xorshift: offsets zstd cannot shrink
  std::vector<event> first;
  for (uint64_t i = 0; i < 2'000'000 && w.status(); ++i, ++appended) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    event e;
    e.thread = t;
    e.kind = op::pwrite64;
    e.ts = 1000 + i * 1000;
    e.fd = 3;
    e.offset = static_cast<int64_t>(x >> 1);
    e.size = x & 0xffff;
    e.result = static_cast<int64_t>(e.size);
    w.append(e);
    if (first.size() < 100) first.push_back(e);
  }
  REQUIRE_FALSE(w.status());
  CHECK(w.status().error().message == path + ": write: No space left on device");
  const auto finished = w.finish();
  REQUIRE_FALSE(finished);
  CHECK(finished.error().message == path + ": write: No space left on device");
  // What was written before the refusal reads back: whole blocks, then a torn tail.
  trace_reader r = or_throw(trace_reader::open(path));
  CHECK_FALSE(r.has_footer());
  CHECK_FALSE(r.damage().empty());
  const auto events = read_all(r);
  CHECK(events.size() > 10'000);  // 1 MiB holds tens of thousands of these
  CHECK(events.size() < appended);
  CHECK(events.size() % 1024 == 0);  // whole blocks only
  for (size_t k = 0; k < first.size(); ++k) {
    CHECK(events[k].offset == first[k].offset);
    CHECK(events[k].size == first[k].size);
  }
}

TEST_CASE("event times are kept in 16 ns units: entry and exit rounded down, order kept") {
  test::temp_dir dir;
  auto write = [&](const std::string& name, writer_options opt) {
    trace_writer w = or_throw(trace_writer::create(dir / name, test::sample_header(), opt));
    const thread_id t = w.add_thread({7, 7, 1, w.intern_string("sh"), 1});
    const uint64_t times[][2] = {{1000, 15}, {1015, 100}, {5'000'000'017, 3}};
    for (const auto& [ts, dur] : times) {
      event e;
      e.kind = op::close;
      e.thread = t;
      e.fd = 3;
      e.ts = ts;
      e.dur = dur;
      w.append(e);
    }
    or_throw(w.finish());
    return or_throw(trace_reader::open(dir / name));
  };
  trace_reader r = write("16.trace", writer_options{});
  CHECK(r.header().time_unit_ns == 16);
  CHECK(r.header().format_major == 3);  // an older reader would take 16 ns for 1: it refuses
  CHECK(r.header().format_minor == format_minor);
  auto got = read_all(r);
  REQUIRE(got.size() == 3);
  CHECK(got[0].ts == 992);  // 1000..1015 -> 992..1008
  CHECK(got[0].dur == 16);
  CHECK(got[1].ts == 1008);  // began as the first ended, and still does: 1015..1115
  CHECK(got[1].dur == 96);
  CHECK(got[2].ts == 5'000'000'016);  // 3 ns within one unit: no time at all
  CHECK(got[2].dur == 0);
  CHECK(r.summary().first_ts == 992);
  CHECK(r.summary().last_ts == 5'000'000'016);

  writer_options exact;
  exact.time_unit_ns = 1;
  trace_reader x = write("1.trace", exact);
  CHECK(x.header().time_unit_ns == 1);
  CHECK(x.header().format_major == 1);
  got = read_all(x);
  REQUIRE(got.size() == 3);
  CHECK(got[0].ts == 1000);
  CHECK(got[0].dur == 15);
  CHECK(got[2].ts == 5'000'000'017);
  CHECK(got[2].dur == 3);

  // A trace of format 1.0, before the unit: times in ns.
  trace_reader old = or_throw(trace_reader::open(SOURCE_DIR "/traces/seed000-rsync.trace"));
  CHECK(old.header().format_minor == 0);
  CHECK(old.header().time_unit_ns == 1);
  auto s = old.events();
  event e;
  bool odd = false;  // some time that is not a multiple of 16: read as written
  for (int i = 0; i < 1000 && s.next(e); ++i) odd = odd || e.ts % 16 != 0 || e.dur % 16 != 0;
  CHECK(odd);
}
