// Requests replayed through a ring of their own (engine_requests.h), as fast as possible: a
// request waits for the earlier requests on its bytes, or on its whole file, that had
// completed when it was submitted in the recording (and not for those on other files), and
// never has more in flight on its ring than the recording had.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <future>
#include <map>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "engine_requests.h"
#include "temp_dir.h"
#include "work_item.h"

using namespace fsrr;

namespace {

struct ring_fixture {
  fsrr::test::temp_dir dir{"/dev/shm"};
  int fd = ::open((dir / "f").c_str(), O_RDWR | O_CREAT, 0644);
  std::array<engine_stats, 4> stats{};
  std::map<uint64_t, int64_t> done;  // recorded submission -> result
  engine_requests requests{stats, [this](const work_item& w, int64_t res, uint64_t) {
                             done[w.ev.ts] = res;
                           }};
  std::vector<uint8_t> bytes = std::vector<uint8_t>(4096, 0x5a);
  uint64_t ordinal = 0;
  ~ring_fixture() { ::close(fd); }

  // A request recorded at ts, completing dur later, then reaped as the replay would first.
  bool go(op kind, uint64_t ts, uint64_t dur, int64_t offset = 0) {
    work_item w;
    w.ev.kind = kind;
    w.ev.ts = ts;
    w.ev.dur = dur;
    w.ev.offset = offset;
    w.ev.via = make_via(engine::io_uring, 1);
    w.ev.file = 1;  // the trace's id of `f`
    const bool write = kind == op::pwrite64;
    w.ev.size = write ? bytes.size() : 0;
    w.ev.result = write ? static_cast<int64_t>(bytes.size()) : 0;
    requests.reap_for(w.ev, fd);
    const std::span<const uint8_t> data =
        write ? std::span<const uint8_t>(bytes) : std::span<const uint8_t>();
    return requests.submit(w, fd, data, {}, ordinal++);
  }
};

}  // namespace

TEST_CASE("as fast as possible, a request waits for what it depends on and for room on its ring") {
  ring_fixture f;
  REQUIRE(f.fd >= 0);
  SECTION("the same bytes, written again after the first write had completed") {
    REQUIRE(f.go(op::pwrite64, 100, 10, 0));
    REQUIRE(f.go(op::pwrite64, 101, 1000, 8192));  // in flight past what follows
    REQUIRE(f.go(op::pwrite64, 120, 10, 0));       // over the first: it waited for it
    CHECK(f.done.count(100) == 1);
    CHECK(f.done[100] == 4096);
    f.requests.drain();
    CHECK(f.done.size() == 3);
  }
  SECTION("an fsync after writes that had completed waits for all of them") {
    REQUIRE(f.go(op::pwrite64, 100, 10, 0));
    REQUIRE(f.go(op::pwrite64, 101, 10, 4096));
    REQUIRE(f.go(op::pwrite64, 102, 10, 8192));
    REQUIRE(f.go(op::fsync, 200, 10));
    CHECK(f.done.count(100) == 1);
    CHECK(f.done.count(101) == 1);
    CHECK(f.done.count(102) == 1);
    f.requests.drain();
    CHECK(f.done[200] == 0);
  }
  SECTION("no more in flight than the recording had: one at a time when it had one") {
    for (uint64_t i = 0; i < 64; ++i) {
      // each recorded write completed before the next was submitted
      REQUIRE(f.go(op::pwrite64, 100 + 20 * i, 10, static_cast<int64_t>(i * 4096)));
      CHECK(f.done.size() == i);  // every earlier one reaped before this one went
    }
    f.requests.drain();
    CHECK(f.stats[static_cast<size_t>(engine::io_uring)].recorded_max_in_flight == 1);
    CHECK(f.stats[static_cast<size_t>(engine::io_uring)].max_in_flight == 1);  // it alone
    CHECK(f.done.size() == 64);
  }
  SECTION("a request on another file that had completed is not waited for") {
    int pipefd[2];
    REQUIRE(::pipe(pipefd) == 0);
    REQUIRE(f.go(op::pwrite64, 100, 50, 0));  // two in flight at once: the deepest is 2
    REQUIRE(f.go(op::pwrite64, 101, 50, 4096));
    f.requests.drain();
    // a read of the empty pipe, recorded as done at 210, in flight until the pipe has a byte
    work_item read;
    read.ev.kind = op::read;
    read.ev.ts = 200;
    read.ev.dur = 10;
    read.ev.size = 1;
    read.ev.result = 1;
    read.ev.via = make_via(engine::io_uring, 1);
    read.ev.file = 2;
    std::array<uint8_t, 16> sink{};
    f.requests.reap_for(read.ev, pipefd[0]);
    REQUIRE(f.requests.submit(read, pipefd[0], {}, sink, f.ordinal++));
    // Were the write to wait for it (the recorded order's rule), only this would end it.
    std::promise<void> written;
    std::thread rescue([&, done = written.get_future()] {
      if (done.wait_for(std::chrono::seconds(5)) == std::future_status::timeout)
        (void)!::write(pipefd[1], "y", 1);
    });
    REQUIRE(f.go(op::pwrite64, 220, 10, 8192));  // on `f`: it goes at once
    CHECK(f.done.count(200) == 0);              // the read still waits for its byte
    CHECK(::write(pipefd[1], "x", 1) == 1);
    written.set_value();
    rescue.join();
    f.requests.drain();
    CHECK(f.done[200] == 1);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
  }
  SECTION("eight recorded in flight: never a ninth") {
    for (uint64_t i = 0; i < 64; ++i)  // each in flight for 8 submissions
      REQUIRE(f.go(op::pwrite64, 100 + i, 8, static_cast<int64_t>(i * 4096)));
    f.requests.drain();
    CHECK(f.stats[static_cast<size_t>(engine::io_uring)].recorded_max_in_flight == 8);
    CHECK(f.stats[static_cast<size_t>(engine::io_uring)].max_in_flight <= 8);
    CHECK(f.done.size() == 64);
  }
}
