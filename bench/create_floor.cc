// create_floor DIR COUNT [SIZE]: the floor under prepare's files/s on this machine. Makes
// COUNT files of SIZE bytes (default 1024) beneath DIR, 1,000 to a directory, as prepare
// does: the directories first, then the files by as many threads as prepare would use (the
// cores, at most 4), each claiming 256 at a time; open(O_CREAT|O_EXCL), one write, close. No
// fsrr code is involved: prepare cannot make the same files faster than this.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace {

double now_s() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

std::string file_path(const std::string& dir, uint64_t i) {
  return fmt::format("{}/d{:04}/f{:03}", dir, i / 1000, i % 1000);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: create_floor DIR COUNT [SIZE]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const uint64_t count = std::strtoull(argv[2], nullptr, 10);
  const size_t size = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024;
  const std::vector<char> data(size, 'x');
  const double start = now_s();
  for (uint64_t d = 0; d * 1000 < count; ++d)
    if (::mkdir(fmt::format("{}/d{:04}", dir, d).c_str(), 0755) != 0) {
      fmt::print(stderr, "create_floor: mkdir in {}: {}\n", dir, std::strerror(errno));
      return 1;
    }
  constexpr uint64_t batch = 256;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  const auto work = [&] {
    for (;;) {
      const uint64_t from = next.fetch_add(batch);
      if (from >= count) return;
      for (uint64_t i = from; i < std::min(count, from + batch); ++i) {
        const std::string p = file_path(dir, i);
        const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || (size > 0 && ::write(fd, data.data(), size) != static_cast<ssize_t>(size)))
          failed = true;
        if (fd >= 0) ::close(fd);
      }
    }
  };
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }
  const double wall = now_s() - start;
  if (failed) {
    fmt::print(stderr, "create_floor: a file beneath {} could not be made\n", dir);
    return 1;
  }
  fmt::print("{} files of {} bytes, {} threads: {:.2f} s, {:.0f} files/s\n", count, size, threads,
             wall, static_cast<double>(count) / wall);
  return 0;
}
