#include "tree_fixture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fsrr::test {
namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("tree fixture: " + what);
}

void file(const std::string& p, size_t size, mode_t mode) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  check(fd >= 0, "create " + p);
  std::vector<char> data(size);
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>(i * 31 + 7);
  check(::write(fd, data.data(), size) == static_cast<ssize_t>(size), "write " + p);
  check(::fchmod(fd, mode) == 0, "chmod " + p);
  ::close(fd);
}

void times(const std::string& p, int64_t mtime_ns) {
  const timespec t[2] = {{1600000000, 111}, {mtime_ns / 1000000000, mtime_ns % 1000000000}};
  check(::utimensat(AT_FDCWD, p.c_str(), t, AT_SYMLINK_NOFOLLOW) == 0, "utimensat " + p);
}

}  // namespace

tree_fixture_counts build_tree_fixture(const std::string& r) {
  tree_fixture_counts c{};
  auto dir = [&](const std::string& p, mode_t mode) {
    check(::mkdir((r + p).c_str(), 0700) == 0, "mkdir " + p);
    ++c.dirs;
    return mode;
  };
  const mode_t top_mode = dir("/data", 0755);
  dir("/data/empty", 0700);
  dir("/data/a", 0755);
  dir("/data/a/b", 0755);
  dir("/data/a/b/c", 0755);
  dir("/data/setgid", 02775);
  const std::vector<std::pair<std::string, size_t>> files = {
      {"/data/zero", 0},          {"/data/one", 1},
      {"/data/a/page", 4096},     {"/data/a/odd", 4095},
      {"/data/a/b/c/big", (1u << 20) + 3},
      {"/data/with space and ünïcödé", 10},
      {"/data/" + std::string(255, 'n'), 7},
      {"/data/setgid/in", 100},
  };
  for (const auto& [p, size] : files) {
    file(r + p, size, 0644);
    ++c.files;
    c.bytes += size;
  }
  file(r + "/data/private", 5, 0600);
  file(r + "/data/none", 3, 0000);
  file(r + "/data/exec", 9, 04755);
  c.files += 3;
  c.bytes += 17;
  // Sparse: 64 MiB with 4 KiB of data at 8 MiB.
  const int fd = ::open((r + "/data/sparse").c_str(), O_WRONLY | O_CREAT, 0644);
  check(fd >= 0 && ::ftruncate(fd, 64 << 20) == 0, "sparse");
  std::vector<char> page(4096, 'x');
  check(::pwrite(fd, page.data(), page.size(), 8 << 20) == 4096, "sparse write");
  ::close(fd);
  ++c.files;
  c.bytes += 64 << 20;
  // Hard links: three names, one inode.
  check(::link((r + "/data/one").c_str(), (r + "/data/a/one-again").c_str()) == 0, "link");
  check(::link((r + "/data/one").c_str(), (r + "/data/a/b/one-more").c_str()) == 0, "link");
  c.hardlinks = 2;
  check(::symlink("one", (r + "/data/rel-link").c_str()) == 0, "symlink");
  check(::symlink("/nowhere/at/all", (r + "/data/a/abs-dangling").c_str()) == 0, "symlink");
  check(::symlink("../..", (r + "/data/a/b/up").c_str()) == 0, "symlink");
  c.symlinks = 3;
  check(::mkfifo((r + "/data/fifo").c_str(), 0640) == 0, "mkfifo");
  c.fifos = 1;
  check(::setxattr((r + "/data/one").c_str(), "user.color", "blue", 4, 0) == 0, "setxattr");
  check(::setxattr((r + "/data/a").c_str(), "user.big", std::string(300, 'v').data(), 300, 0) == 0,
        "setxattr");
  times(r + "/data/a/page", 1234567890123456789);
  times(r + "/data/rel-link", 1111111111000000001);
  // Modes last: chmod of a directory to its final mode, then its times.
  check(::chmod((r + "/data/setgid").c_str(), 02775) == 0, "chmod");
  check(::chmod((r + "/data").c_str(), top_mode) == 0, "chmod");
  times(r + "/data/a/b", 999999999999999999);
  return c;
}

}  // namespace fsrr::test
