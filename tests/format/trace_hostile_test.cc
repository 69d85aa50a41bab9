// Traces whose frames and checksums are whole but whose contents are hostile: what the reader
// fuzzer (tests/fuzz) found. Each must give one clear trace_error (or, for a trace that is
// merely unusual, the right answer), never a crash, a misread or a huge allocation.
#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>

#include <catch2/catch.hpp>

#include "container.h"
#include "describe.h"
#include "sample_trace.h"
#include "temp_dir.h"
#include "trace_error.h"
#include "trace_framing.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;

namespace {

std::vector<uint8_t> slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& p, const std::vector<uint8_t>& data) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// Reads everything a user can ask for; returns the error line, or "" if there was none.
[[maybe_unused]] std::string read_error(const std::string& path) {
  try {
    trace_reader r(path);
    (void)r.summary();
    (void)r.tree();
    auto s = r.events();
    event e;
    while (s.next(e)) (void)describe(r, e);
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
  auto bytes = slurp(dir / "t.trace");
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
  trace_reader r(dir / "odd.trace");
  CHECK(r.has_footer());
  CHECK(r.summary().events == s.events.size());
}

TEST_CASE("a path name that is not UTF-8 is described with \\x escapes") {
  // describe() quoted names through JSON, which throws on bytes that are not UTF-8.
  test::temp_dir dir;
  {
    trace_writer w(dir / "t.trace", test::sample_header());
    const thread_id t = w.add_thread({7, 7, 1, w.intern_string("sh"), 1});
    event e;
    e.kind = op::openat;
    e.thread = t;
    e.ts = 1000;
    e.result = 3;
    e.path = w.intern_path("/d/caf\xe9\"\\.txt");
    e.file = w.intern_file({1, 2, 3, S_IFREG});
    e.flags = O_RDONLY;
    w.append(e);
    w.finish();
  }
  trace_reader r(dir / "t.trace");
  auto s = r.events();
  event e;
  REQUIRE(s.next(e));
  CHECK(describe(r, e) ==
        R"(0.000001 [7] openat("/d/caf\xe9\"\\.txt", O_RDONLY, 0) = 3 <0.000000>)");
}
