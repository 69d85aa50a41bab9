// mt_writer DIR THREADS FILES: a multi-threaded writer for the end-to-end tests. Each thread
// writes FILES files of its own (64 KiB in 4 KiB writes, fsync, rename into place) and its
// own 4 KiB slots of one shared log file (pwrite); the main thread then truncates the log
// and removes one directory. Known amounts, so a replay can be checked exactly.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(2);
  }
}

void writer(const std::string& dir, int t, int files, int log) {
  char block[4096];
  for (size_t i = 0; i < sizeof block; ++i) block[i] = static_cast<char>('a' + t);
  const std::string mine = dir + "/t" + std::to_string(t);
  check(::mkdir(mine.c_str(), 0755) == 0, "mkdir");
  for (int f = 0; f < files; ++f) {
    const std::string tmp = mine + "/.f" + std::to_string(f) + ".tmp";
    const std::string final_name = mine + "/f" + std::to_string(f);
    const int fd = ::open(tmp.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0644);
    check(fd >= 0, "open");
    for (int b = 0; b < 16; ++b) check(::write(fd, block, sizeof block) == sizeof block, "write");
    check(::fsync(fd) == 0, "fsync");
    check(::close(fd) == 0, "close");
    check(::rename(tmp.c_str(), final_name.c_str()) == 0, "rename");
    const off_t slot = (static_cast<off_t>(f) * 64 + t) * 4096;
    check(::pwrite(log, block, sizeof block, slot) == sizeof block, "pwrite log");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: mt_writer DIR THREADS FILES\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int threads = std::atoi(argv[2]), files = std::atoi(argv[3]);
  const int log = ::open((dir + "/shared.log").c_str(), O_CREAT | O_RDWR, 0600);
  check(log >= 0, "open log");
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(writer, dir, t, files, log);
  for (auto& th : pool) th.join();
  check(::fdatasync(log) == 0, "fdatasync");
  check(::ftruncate(log, 4096L * 64 * files / 2) == 0, "ftruncate");
  check(::close(log) == 0, "close log");
  const std::string gone = dir + "/t0";
  for (int f = 0; f < files; ++f)
    check(::unlink((gone + "/f" + std::to_string(f)).c_str()) == 0, "unlink");
  check(::rmdir(gone.c_str()) == 0, "rmdir");
  return 0;
}
