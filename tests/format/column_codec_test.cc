#include <catch2/catch.hpp>

#include "column_codec.h"

using namespace fsrr;
using namespace fsrr::codec;

namespace {

op_map this_build() {
  op_map m;
  for (size_t i = 0; i < op_count; ++i)
    m.codes.push_back({true, static_cast<op>(i), wire_fields(static_cast<op>(i))});
  return m;
}

group_input input_of(const group_encoder& g, thread_id t) {
  group_input in{t, g.count(), g.first_ts(), {}};
  for (int c = 0; c < column_count; ++c)
    in.cols[c] = {g.data(static_cast<column>(c)).data(), g.data(static_cast<column>(c)).size()};
  return in;
}

}  // namespace

TEST_CASE("zigzag maps small magnitudes to small codes") {
  CHECK(zigzag(0) == 0);
  CHECK(zigzag(-1) == 1);
  CHECK(zigzag(1) == 2);
  CHECK(zigzag(INT64_MIN) == UINT64_MAX);
  for (int64_t v : {int64_t(0), int64_t(-5), int64_t(123456789), INT64_MAX, INT64_MIN})
    CHECK(unzigzag(zigzag(v)) == v);
}

TEST_CASE("a sequential read loop encodes as a few bytes per event") {
  group_encoder g(0);
  for (int k = 0; k < 1000; ++k) {
    event e;
    e.kind = op::read;
    e.thread = 1;
    e.ts = 1000 * k;
    e.dur = 500;
    e.fd = 3;
    e.file = 7;
    e.offset = 65536 * k;
    e.size = 65536;
    e.result = 65536;
    g.add(e);
  }
  // Per event: op 1, gap 2 (500 ns think time; 1 for the first), dur 2, result 1 (as
  // predicted), fd 1, file 1 (delta), offset 1 (as predicted), size 3, via 1 (a syscall: 0)
  // — before zstd.
  CHECK(g.bytes() == 12 + 999 * 13);
  std::vector<event> out;
  uint64_t unknown = 0;
  REQUIRE(decode_group(input_of(g, 1), this_build(), out, unknown));
  REQUIRE(out.size() == 1000);
  CHECK(out[999].offset == 65536 * 999);
  CHECK(out[999].result == 65536);
  CHECK(out[999].ts == 999000);
}

TEST_CASE("a short read breaks the offset prediction without breaking decoding") {
  group_encoder g(10);
  std::vector<event> in;
  for (int k = 0; k < 4; ++k) {
    event e;
    e.kind = k == 2 ? op::lseek : op::read;
    e.thread = 1;
    e.ts = 10 + 100 * k;
    e.fd = 3;
    e.file = 9;
    e.offset = k == 3 ? 5 : 100 * k;
    e.size = k == 2 ? 0 : 100;
    e.result = k == 1 ? 40 : (k == 2 ? 5 : 100);
    if (k == 2) e.aux = 0;  // SEEK_SET
    g.add(e);
    in.push_back(e);
  }
  std::vector<event> out;
  uint64_t unknown = 0;
  REQUIRE(decode_group(input_of(g, 1), this_build(), out, unknown));
  CHECK(out == in);
}

TEST_CASE("a column cut short is an error, not a misread") {
  group_encoder g(0);
  event e;
  e.kind = op::pwrite64;
  e.thread = 1;
  e.size = 1 << 20;
  e.result = 1 << 20;
  g.add(e);
  auto in = input_of(g, 1);
  in.cols[c_size] = in.cols[c_size].first(1);
  std::vector<event> out;
  uint64_t unknown = 0;
  const auto decoded = decode_group(in, this_build(), out, unknown);
  REQUIRE_FALSE(decoded);
  CHECK(decoded.error().message == "thread 1 event 0: field column too short");
}

TEST_CASE("an op this build does not know is decoded, counted and dropped") {
  group_encoder g(0);
  for (op o : {op::openat, op::close, op::fsync}) {
    event e;
    e.kind = o;
    e.thread = 1;
    e.fd = 3;
    e.path = 2;
    g.add(e);
  }
  op_map m = this_build();
  m.codes[static_cast<size_t>(op::close)].known = false;  // as if written by a newer fsrr
  std::vector<event> out;
  uint64_t unknown = 0;
  REQUIRE(decode_group(input_of(g, 1), m, out, unknown));
  CHECK(unknown == 1);
  REQUIRE(out.size() == 2);
  CHECK(out[0].kind == op::openat);
  CHECK(out[1].kind == op::fsync);
  CHECK(out[1].fd == 3);
}
