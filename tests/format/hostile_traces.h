// Hostile traces for the tests and for bench/hostile_rss.sh: payloads whose frames and
// checksums are whole but whose contents lie, framed the way the reader fuzzer frames them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fsrr::test {

// A header whose only op (code 0) carries no fields: an event then takes one byte in each of
// the op, gap, dur and result columns. `time_unit_ns`: what it says event times count in.
std::vector<uint8_t> bare_header(uint32_t time_unit_ns = 0);

// Block 0: the root path, thread 1 ("sh"), and `count` events of thread 1 whose four columns
// hold `column_bytes` zeros each. `blob`: bytes of the path-name blob beyond the names (none:
// 0); `min_ts`: what the chunk says its first time is; `gap`, `dur`: the byte each of those
// columns holds instead of zeros (a one-byte varint: 2 is a gap of +1 unit, 3 a duration of 3).
std::vector<uint8_t> events_block(uint32_t count, size_t column_bytes, size_t blob = 0,
                                  uint64_t min_ts = 0, uint8_t gap = 0, uint8_t dur = 0);

// A footer whose block index (a vector of 8-byte aligned structs) starts at 4 mod 8, which
// the FlatBuffers verifier lets through: it checks only the length field's alignment.
std::vector<uint8_t> misaligned_footer();

// Writes `data` to `p`, replacing it.
void spit(const std::string& p, const std::vector<uint8_t>& data);

// A trace of the given payloads, framed as the fuzzer frames them.
void write_payloads(const std::string& path, const std::vector<std::vector<uint8_t>>& records,
                    uint8_t flags = 0);

}  // namespace fsrr::test
