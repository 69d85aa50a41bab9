// wake_floor [SPIN_US...] [-n N]: the floor under faithful replay's lateness on this machine.
// A lone thread does what a replay thread does before each op: sleeps until SPIN_US before
// the op is due (1-10 ms ahead, TIMER_ABSTIME, 1 ns timer slack), spins the rest, and notes
// how late it got there. No replayer is involved: its lateness cannot be lower than this.
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace {

uint64_t now_ns() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(t.tv_nsec);
}

void measure(uint64_t spin_ns, size_t n) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<uint64_t> ahead(1'000'000, 10'000'000);
  std::vector<uint64_t> late(n);
  for (uint64_t& l : late) {
    const uint64_t due = now_ns() + ahead(rng), wake = due - spin_ns;
    const timespec t{static_cast<time_t>(wake / 1'000'000'000),
                     static_cast<long>(wake % 1'000'000'000)};
    ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr);
    uint64_t x = now_ns();
    while (x < due) x = now_ns();
    l = x - due;
  }
  std::sort(late.begin(), late.end());
  fmt::print("spin {:>5} us: lateness p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us ({} waits)\n",
             spin_ns / 1000, late[n / 2] / 1e3, late[n * 99 / 100] / 1e3, late.back() / 1e3, n);
}

}  // namespace

int main(int argc, char** argv) {
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  size_t n = 2000;
  std::vector<uint64_t> spins;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-n") == 0 && i + 1 < argc)
      n = std::max<size_t>(100, std::strtoull(argv[++i], nullptr, 10));
    else
      spins.push_back(std::strtoull(argv[i], nullptr, 10) * 1000);
  }
  if (spins.empty()) spins = {0, 100'000, 300'000, 1'000'000};  // 100 us: the replayer's spin_ns
  for (uint64_t s : spins) measure(s, n);
}
