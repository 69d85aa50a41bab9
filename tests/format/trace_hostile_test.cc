// Traces whose frames and checksums are whole but whose contents are hostile: what the reader
// fuzzer (tests/fuzz) found. Each must give one clear trace_error (or, for a trace that is
// merely unusual, the right answer), never a crash, a misread or a huge allocation.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <catch2/catch.hpp>
#include <flatbuffers/flatbuffers.h>
#include <fmt/format.h>

#include "container.h"
#include "describe.h"
#include "hostile_traces.h"
#include "sample_trace.h"
#include "temp_dir.h"
#include "trace_error.h"
#include "trace_framing.h"
#include "trace_generated.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;
using fsrr::test::file_bytes;
using fsrr::test::bare_header;
using fsrr::test::events_block;
using fsrr::test::misaligned_footer;
using fsrr::test::spit;
using fsrr::test::write_payloads;

namespace {

// Reads everything a user can ask for; returns the error line, or "" if there was none.
std::string read_error(const std::string& path) {
  try {
    trace_reader r = or_throw(trace_reader::open(path));
    (void)r.summary();
    (void)r.tree();
    auto s = r.events();
    event e;
    while (s.next(e)) (void)describe(r, e);
    or_throw(s.status());
    return "";
  } catch (const trace_error& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("a footer at an offset that is not 8-aligned is read from an aligned copy") {
  // The footer's FlatBuffer used to be read in place in the mapping (UBSan: misaligned
  // BlockRef). An unknown skippable frame before it moves it to offset 3 mod 8.
  test::temp_dir dir;
  const auto s = test::write_sample(dir / "t.trace", {});
  auto bytes = file_bytes(dir / "t.trace");
  const auto frames = container::scan(bytes).frames;
  REQUIRE(frames.back().kind == container::frame_ref::footer);
  const size_t at = frames.back().offset;
  const uint32_t pad = static_cast<uint32_t>((3 + 16 - at % 8) % 8);
  std::vector<uint8_t> skip = {0x5f, 0x2a, 0x4d, 0x18};
  skip.insert(skip.end(), reinterpret_cast<const uint8_t*>(&pad),
              reinterpret_cast<const uint8_t*>(&pad) + 4);
  skip.resize(8 + pad, 0);
  bytes.insert(bytes.begin() + static_cast<ptrdiff_t>(at), skip.begin(), skip.end());
  REQUIRE((at + skip.size()) % 8 == 3);
  spit(dir / "odd.trace", bytes);
  trace_reader r = or_throw(trace_reader::open(dir / "odd.trace"));
  CHECK(r.has_footer());
  CHECK(r.summary().events == s.events.size());
}

TEST_CASE("a path name that is not UTF-8 is described with hex escapes") {
  // describe() quoted names through JSON, which throws on bytes that are not UTF-8.
  test::temp_dir dir;
  {
    trace_writer w = or_throw(trace_writer::create(dir / "t.trace", test::sample_header()));
    const thread_id t = w.add_thread({7, 7, 1, w.intern_string("sh"), 1});
    event e;
    e.kind = op::openat;
    e.thread = t;
    e.ts = 1008;  // a multiple of the 16 ns the writer keeps times in
    e.result = 3;
    e.path = w.intern_path("/d/caf\xe9\"\\.txt");
    e.file = w.intern_file({1, 2, 3, S_IFREG});
    e.flags = O_RDONLY;
    w.append(e);
    or_throw(w.finish());
  }
  trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
  auto s = r.events();
  event e;
  REQUIRE(s.next(e));
  CHECK(describe(r, e) ==
        R"(0.000001 [7] openat("/d/caf\xe9\"\\.txt", O_RDONLY, 0) = 3 <0.000000>)");
}

TEST_CASE("a trace may name 65535 devices and no more") {
  // The reader keeps a file's device as a 16-bit index into the trace's devices.
  const auto write = [](const std::string& path, uint64_t devices) {
    trace_writer w = or_throw(trace_writer::create(path, test::sample_header()));
    for (uint64_t d = 1; d <= devices; ++d) (void)w.intern_file({d, 7, 0, S_IFREG});
    or_throw(w.finish());
  };
  test::temp_dir dir;
  write(dir / "most.trace", 65535);
  trace_reader r = or_throw(trace_reader::open(dir / "most.trace"));
  REQUIRE(r.file_count() == 65535);
  CHECK(r.file(65535) == file_info{65535, 7, 0, S_IFREG});
  CHECK(r.file(1) == file_info{1, 7, 0, S_IFREG});
  CHECK(read_error(dir / "most.trace") == "");
  write(dir / "more.trace", 65536);
  const std::string error = read_error(dir / "more.trace");
  INFO(error);
  CHECK(error.starts_with(dir / "more.trace" + ": block "));
  CHECK(error.ends_with(": a trace of more than 65,535 devices"));
}

TEST_CASE("the summary of a trace without footer decodes a huge group a batch at a time") {
  // It decoded each thread group whole: 8M one-byte events (a 32 MB block, 3 KB compressed)
  // took 8M decoded events, ~800 MB. Under an address-space limit well below that, the
  // summary must still come out right.
  test::temp_dir dir;
  const uint32_t n = 8u << 20;
  write_payloads(dir / "t.trace", {bare_header(), events_block(n, n)});
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (320ull << 20);
    const rlimit rl{limit, limit};
    int code = 3;
    try {
      if (::setrlimit(RLIMIT_AS, &rl) == 0) {
        trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
        code = r.summary().events == n ? 0 : 1;
      }
    } catch (const std::bad_alloc&) {
      code = 2;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("a header's time unit is at most a microsecond, and times grow by it without overflow") {
  test::temp_dir dir;
  write_payloads(dir / "t.trace", {bare_header(1001), events_block(4, 4)});
  const auto refused = trace_reader::open(dir / "t.trace");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message ==
        dir / "t.trace" + ": header: a time unit of 1001 ns (at most 1000)");
  // At 1 us, four events each 1 unit after the last ended, each 3 units long.
  write_payloads(dir / "t.trace", {bare_header(1000), events_block(4, 4, 0, 0, 2, 3)});
  trace_reader r = or_throw(trace_reader::open(dir / "t.trace"));
  CHECK(r.header().time_unit_ns == 1000);
  auto s = r.events();
  event e;
  int n = 0;
  while (s.next(e)) {
    CHECK(e.ts == 1000 + 4000 * static_cast<uint64_t>(n));
    CHECK(e.dur == 3000);
    ++n;
  }
  CHECK(s.status());
  CHECK(n == 4);
}

TEST_CASE("a group claiming more events than its op column holds is refused") {
  test::temp_dir dir;
  write_payloads(dir / "t.trace", {bare_header(), events_block(4096 * 3 + 1, 4096 * 3)});
  CHECK(read_error(dir / "t.trace") ==
        dir / "t.trace" + ": block 0 at offset 108: event count exceeds its columns");
}

TEST_CASE("a rejected trace leaves no descriptor open") {
  // The fuzzer ran out of descriptors when ~trace_reader closed the file, which it never did
  // for a trace its constructor refused: the file is the impl's now, closed as it goes.
  test::temp_dir dir;
  auto header = bare_header();
  header[header.size() - 4] ^= 0xff;  // not a valid header any more
  write_payloads(dir / "t.trace", {header});
  auto open_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), {});
  };
  const auto before = open_fds();
  for (int i = 0; i < 50; ++i)
    CHECK(read_error(dir / "t.trace") == dir / "t.trace" + ": header: not a valid fsrr header");
  CHECK(open_fds() == before);
}

TEST_CASE("a footer whose block index is misaligned is refused") {
  // The verifier passed it and the reader read its BlockRefs at 4 mod 8 (UBSan).
  test::temp_dir dir;
  const auto footer = misaligned_footer();
  REQUIRE(!footer.empty());
  write_payloads(dir / "t.trace", {bare_header(), footer}, fuzz::flag_footer);
  CHECK(read_error(dir / "t.trace") ==
        dir / "t.trace" + ": footer: a column of 8-byte values is misaligned");
}

TEST_CASE("a path-name blob holding more than its names is refused, not kept") {
  // Every block's blob is kept for the reader's life: a block could pin megabytes for a name.
  test::temp_dir dir;
  write_payloads(dir / "t.trace", {bare_header(), events_block(1, 1, 1 << 20)});
  CHECK(read_error(dir / "t.trace") ==
        dir / "t.trace" + ": block 0 at offset 108: path names take 0 bytes of a blob of 1048576");
}

TEST_CASE("a frame claiming more than zstd could make of it is refused before memory is sized") {
  // 13 bytes: magic, a header with a 4-byte content size of 1 GiB, one RLE block of 1000 bytes.
  // The reader sized its buffer to the claim first: a few such frames pinned gigabytes.
  const std::vector<uint8_t> frame = {0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0x00, 0x00, 0x00,
                                      0x40, 0x43, 0x1f, 0x00, 0x00};
  std::vector<uint8_t> out;
  const auto claimed = container::decompress_frame(frame, out);
  REQUIRE_FALSE(claimed);
  CHECK(claimed.error().message ==
        "block claims 1073741824 bytes, more than a block may hold (268435456)");
  std::vector<uint8_t> modest = frame;  // 1 MiB: within the cap, not within 13 bytes' reach
  modest[7] = 0x10, modest[8] = 0x00;
  const auto beyond = container::decompress_frame(modest, out);
  REQUIRE_FALSE(beyond);
  CHECK(beyond.error().message ==
        "block claims 1048576 bytes, more than a frame of 13 bytes can hold");
  CHECK(out.capacity() < (1u << 20));
}

TEST_CASE("a block whose events come before the first time it claims is refused") {
  // The merge joins a block once the stream reaches its claimed first time: a lie put its
  // events out of time order.
  test::temp_dir dir;
  write_payloads(dir / "t.trace", {bare_header(), events_block(3, 3, 0, 5'000'000'000)});
  CHECK(read_error(dir / "t.trace") ==
        dir / "t.trace" + ": block 0 at offset 108: an event before the block's first time");
}

TEST_CASE("a thread or file of a host the header does not list is refused") {
  // Host indices (format 1.4) index the header's hosts; a trace of one host lists none.
  const auto write = [](const std::string& path, size_t hosts, uint16_t thread_host,
                        uint16_t file_host) {
    header_info h = test::sample_header();
    for (size_t k = 0; k < hosts; ++k) h.hosts.push_back({fmt::format("h{}", k)});
    trace_writer w = or_throw(trace_writer::create(path, h));
    thread_info t{7, 7, 1, w.intern_string("sh"), 1};
    t.host = thread_host;
    (void)w.add_thread(t);
    (void)w.intern_file({1, 7, 0, S_IFREG, file_host});
    or_throw(w.finish());
  };
  test::temp_dir dir;
  write(dir / "two.trace", 2, 1, 1);
  {
    trace_reader r = or_throw(trace_reader::open(dir / "two.trace"));
    CHECK(r.thread(1).host == 1);
    CHECK(r.file(1) == file_info{1, 7, 0, S_IFREG, 1});
    CHECK(read_error(dir / "two.trace") == "");
  }
  write(dir / "thread.trace", 0, 1, 0);
  CHECK(read_error(dir / "thread.trace").ends_with(": thread 1 names an unknown host"));
  write(dir / "file.trace", 2, 0, 2);
  CHECK(read_error(dir / "file.trace").ends_with(": file 1 names an unknown host"));
}
