// A trace is untrusted input: every damaged file must give either a clean prefix of what was
// written or one clear error, never a crash or a misread.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "container.h"
#include "sample_trace.h"
#include "temp_dir.h"
#include "trace_error.h"
#include "trace_generated.h"
#include "trace_reader.h"

using namespace fsrr;
using fsrr::test::file_bytes;

namespace {

void spit(const std::string& p, const std::vector<uint8_t>& data, size_t n) {
  ::unlink(p.c_str());  // truncating a file that was just mapped is slow
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(n));
}

struct contents {
  std::vector<event> events;
  std::vector<tree_entry> tree;
  std::vector<std::string> tree_paths;
  uint64_t lost = 0;
  bool footer = false;
};

contents read_everything(const std::string& p) {
  trace_reader r = or_throw(trace_reader::open(p));
  contents c;
  c.tree.assign(r.tree().begin(), r.tree().end());
  for (const auto& t : c.tree) c.tree_paths.push_back(r.path_string(t.path));
  auto s = r.events();
  event e;
  while (s.next(e)) c.events.push_back(e);
  or_throw(s.status());
  c.lost = r.summary().lost_events;
  c.footer = r.has_footer();
  return c;
}

// Each thread's events must be a prefix of what that thread wrote.
bool per_thread_prefix(const std::vector<event>& got, const std::vector<event>& all) {
  std::map<thread_id, std::vector<event>> want, have;
  for (const auto& e : all) want[e.thread].push_back(e);
  for (const auto& e : got) have[e.thread].push_back(e);
  for (const auto& [t, v] : have) {
    const auto& w = want[t];
    if (v.size() > w.size() || !std::equal(v.begin(), v.end(), w.begin())) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a trace cut at any byte reads as a clean prefix or fails on its header") {
  test::temp_dir dir("/dev/shm");
  writer_options opt;
  opt.chunk_events = 24;
  opt.tree_entries = 2;
  const auto s = test::write_sample(dir / "full.trace", opt);
  const auto bytes = file_bytes(dir / "full.trace");
  const auto frames = container::scan(bytes).frames;
  const size_t header_end = frames.at(0).size;
  const std::string cut = dir / "cut.trace";
  size_t prefixes = 0, last_events = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("cut at " << n << " of " << bytes.size());
    spit(cut, bytes, n);
    if (n < header_end) {
      CHECK_THROWS_AS(read_everything(cut), trace_error);
      continue;
    }
    const contents c = read_everything(cut);
    CHECK_FALSE(c.footer);
    CHECK(or_throw(trace_reader::open(cut)).complete() == false);
    CHECK(per_thread_prefix(c.events, s.events));
    CHECK(c.events.size() >= last_events);  // more bytes never read as fewer events
    last_events = c.events.size();
    ++prefixes;
  }
  CHECK(prefixes == bytes.size() - header_end);
  CHECK(last_events == s.events.size());  // all blocks precede the footer
}

TEST_CASE("any flipped byte of a closed trace is an error or changes nothing") {
  test::temp_dir dir("/dev/shm");
  writer_options opt;
  opt.chunk_events = 64;
  test::write_sample(dir / "full.trace", opt);
  const auto bytes = file_bytes(dir / "full.trace");
  const contents want = read_everything(dir / "full.trace");
  const std::string bad = dir / "bad.trace";
  size_t errors = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    INFO("flipped byte " << i);
    auto copy = bytes;
    copy[i] ^= 0x40;
    spit(bad, copy, copy.size());
    try {
      const contents got = read_everything(bad);
      CHECK(got.events == want.events);
      CHECK(got.tree == want.tree);
      CHECK(got.tree_paths == want.tree_paths);
      CHECK(got.lost == want.lost);
    } catch (const trace_error& e) {
      CHECK(std::string(e.what()).find(bad) == 0);  // the line names the file
      ++errors;
    }
  }
  // Checksums cover every frame; only bytes zstd ignores may pass unnoticed.
  CHECK(errors >= bytes.size() * 99 / 100);
}

TEST_CASE("a corrupted block is named with its number and offset") {
  test::temp_dir dir("/dev/shm");
  writer_options opt;
  opt.chunk_events = 64;
  test::write_sample(dir / "full.trace", opt);
  const auto bytes = file_bytes(dir / "full.trace");
  const auto frames = container::scan(bytes).frames;
  size_t block = 0;
  for (const auto& f : frames) {
    if (f.kind != container::frame_ref::block) continue;
    auto copy = bytes;
    copy[f.offset + f.size - 2] ^= 0x01;  // inside the frame's checksum
    spit(dir / "bad.trace", copy, copy.size());
    CHECK_THROWS_WITH(read_everything(dir / "bad.trace"),
                      Catch::Contains(fmt::format("block {} at offset {}: checksum mismatch",
                                                  block, f.offset)));
    ++block;
  }
  CHECK(block >= 4);
}

TEST_CASE("a killed writer leaves every flushed block readable") {
  test::temp_dir dir("/dev/shm");
  writer_options opt;
  opt.chunk_events = 24;
  const auto s = test::write_sample(dir / "killed.trace", opt, false);
  trace_reader r = or_throw(trace_reader::open(dir / "killed.trace"));
  CHECK_FALSE(r.has_footer());
  CHECK(r.damage().empty());
  CHECK_FALSE(r.complete());
  CHECK(read_everything(dir / "killed.trace").events.size() == s.events.size());

  // Zeros after the last write (a crash on a delayed-allocation file system) are a torn tail.
  auto bytes = file_bytes(dir / "killed.trace");
  bytes.resize(bytes.size() + 8192, 0);
  spit(dir / "zeros.trace", bytes, bytes.size());
  trace_reader z = or_throw(trace_reader::open(dir / "zeros.trace"));
  CHECK(z.damage().find("8192 zero bytes") != std::string::npos);
  CHECK(read_everything(dir / "zeros.trace").events.size() == s.events.size());
}

TEST_CASE("an unknown major version is refused by name") {
  test::temp_dir dir("/dev/shm");
  flatbuffers::FlatBufferBuilder fbb;
  const auto names = fbb.CreateVectorOfStrings(std::vector<std::string>{"read"});
  const auto fields = fbb.CreateVector(std::vector<uint32_t>{F_FD});
  fb::HeaderBuilder b(fbb);
  b.add_format_major(4);
  b.add_format_minor(0);
  b.add_op_names(names);
  b.add_op_fields(fields);
  fbb.Finish(b.Finish(), "FSRH");
  const auto frame =
      container::skippable_frame(container::header_magic, {fbb.GetBufferPointer(), fbb.GetSize()});
  spit(dir / "v4.trace", frame, frame.size());
  CHECK_THROWS_WITH(
      or_throw(trace_reader::open(dir / "v4.trace")),
      Catch::Contains("format version 4.0 is not supported (this fsrr reads 1.x, 2.x and 3.x)"));
}

TEST_CASE("files that are not traces are refused in one line") {
  test::temp_dir dir("/dev/shm");
  spit(dir / "empty", {}, 0);
  CHECK_THROWS_WITH(or_throw(trace_reader::open(dir / "empty")),
                    Catch::EndsWith("empty file, not an fsrr trace"));
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'};
  spit(dir / "text", text, text.size());
  CHECK_THROWS_WITH(or_throw(trace_reader::open(dir / "text")),
                    Catch::EndsWith("not an fsrr trace"));
  CHECK_THROWS_WITH(or_throw(trace_reader::open(dir / "missing")),
                    Catch::Contains("No such file or directory"));
  CHECK_THROWS_WITH(or_throw(trace_reader::open(dir.path())),
                    Catch::EndsWith("not a regular file"));
}
