// write_hostile DIR: writes the hostile traces bench/hostile_rss.sh measures fsrr on —
//   huge-group.trace  8 Mi one-byte events of one thread in a 32 MiB block, 3 KB on disk
//   max-block.trace   63 Mi events: a block of 252 MiB, just below the 256 MiB a block may hold
//   claim-1g.trace    a frame claiming 1 GiB from 13 bytes (refused before memory is sized)
//   blob.trace        a path-name blob of 1 MiB beyond its names (refused, not kept)
#include <cstdio>
#include <fstream>
#include <string>

#include "hostile_traces.h"

using namespace fsrr::test;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  write_payloads(dir + "/huge-group.trace", {bare_header(), events_block(8u << 20, 8u << 20)});
  write_payloads(dir + "/max-block.trace", {bare_header(), events_block(63u << 20, 63u << 20)});
  write_payloads(dir + "/blob.trace", {bare_header(), events_block(1, 1, 1 << 20)});
  // a valid trace's first bytes, then the 13-byte frame (see trace_hostile_test.cc)
  write_payloads(dir + "/claim-1g.trace", {bare_header(), events_block(1, 1)});
  std::ofstream(dir + "/claim-1g.trace", std::ios::binary | std::ios::app)
      .write("\x28\xb5\x2f\xfd\xa0\x00\x00\x00\x40\x43\x1f\x00\x00", 13);
  return 0;
}
