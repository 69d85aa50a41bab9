// libFuzzer harness for the trace reader, below the checksums: the input is decompressed
// header/block/footer payloads (see trace_framing.h), framed validly, so mutations reach the
// FlatBuffers verifier and the column decoders. It does what a user does with a trace: info,
// tables, the tree, every event in time order through describe() and to_json(), and the
// replayer's end state. A trace_error is the correct answer to a bad trace; anything else
// (another exception, a sanitizer report, a leak, an rss over the limit) is a bug.
// Run: CC=clang CXX=clang++ cmake -S . -B build-fuzz -DFSRR_FUZZ=ON && cmake --build build-fuzz
// -j2 --target trace_fuzz trace_fuzz_seeds && build-fuzz/tests/fuzz/trace_fuzz_seeds corpus
// traces/*.trace && build-fuzz/tests/fuzz/trace_fuzz corpus -jobs=1 -workers=1
// -rss_limit_mb=4096 -max_total_time=600 (tests/fuzz/run.sh does all of it).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "describe.h"
#include "end_state.h"
#include "trace_error.h"
#include "trace_framing.h"
#include "trace_reader.h"

using namespace fsrr;

namespace {

// Dumped the way `fsrr dump --json` would, minus the UTF-8 check: file names are bytes.
void dump(const nlohmann::json& j) {
  (void)j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void read_all(const std::string& path) {
  trace_reader r = or_throw(trace_reader::open(path));
  (void)r.header();
  (void)r.damage();
  (void)info_text(r);
  dump(info_json(r));
  for (const auto& t : r.tree()) dump(to_json(r, t));
  for (path_id p = 1; p <= r.path_count(); ++p) (void)r.path_string(p);
  for (string_id s = 1; s <= r.string_count(); ++s) (void)r.string(s);
  for (file_id f = 1; f <= r.file_count(); ++f) (void)r.file(f);
  for (thread_id t = 1; t <= r.thread_count(); ++t) (void)r.thread(t);
  auto s = r.events();
  event e;
  while (s.next(e)) {
    (void)describe(r, e);
    dump(to_json(r, e));
  }
  or_throw(s.status());
}

void end_state(const std::string& path) {
  trace_reader r = or_throw(trace_reader::open(path));
  (void)or_throw(expected_end_state(r));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A memfd, not a file: the reader maps it by path, and nothing touches the disk.
  static const int fd = ::memfd_create("trace_fuzz", MFD_CLOEXEC);
  static const std::string path = fmt::format("/proc/self/fd/{}", fd);
  const auto file = fuzz::frame_trace({data, size});
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size()))
    std::abort();
  for (auto* run : {read_all, end_state}) {
    try {
      run(path);
    } catch (const trace_error& e) {
      if (std::getenv("TRACE_FUZZ_VERBOSE")) std::fprintf(stderr, "trace_error: %s\n", e.what());
    }
  }
  return 0;
}
