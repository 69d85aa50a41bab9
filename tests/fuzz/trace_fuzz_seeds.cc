// Seeds the fuzzer's corpus: each trace given, and the format tests' sample trace written with
// small blocks (so the seeds span several blocks, every op and every tree entry kind), turned
// into the fuzzer's input format (trace_framing.h): its decompressed payloads.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "sample_trace.h"
#include "trace_framing.h"

namespace {

void convert(const std::string& trace, const std::string& out) {
  std::ifstream in(trace, std::ios::binary);
  const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in), {}};
  const auto input = fsrr::fuzz::unframe_trace(file);
  std::ofstream(out, std::ios::binary)
      .write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
  std::printf("%s: %zu bytes of payloads\n", out.c_str(), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [TRACE...]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  for (int i = 2; i < argc; ++i) convert(argv[i], fmt::format("{}/seed-{}", dir, i - 1));
  // The sample: whole, in blocks of a few events, and as a killed writer leaves it.
  struct variant {
    const char* name;
    uint32_t chunk_events;
    uint32_t tree_entries;
    bool finish;
  } variants[] = {{"whole", 1000000, 65536, true},
                  {"small-blocks", 7, 3, true},
                  {"killed", 11, 2, false}};
  for (const auto& v : variants) {
    const std::string tmp = fmt::format("{}/.sample.trace", dir);
    std::remove(tmp.c_str());
    fsrr::writer_options o;
    o.chunk_events = v.chunk_events;
    o.tree_entries = v.tree_entries;
    fsrr::test::write_sample(tmp, o, v.finish);
    convert(tmp, fmt::format("{}/sample-{}", dir, v.name));
    std::remove(tmp.c_str());
  }
  return 0;
}
