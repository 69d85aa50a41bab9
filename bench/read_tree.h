// The benchmarks' warm-up: every regular file under a directory read once, so a replay starts
// on a tree whose pages the page cache holds, as the native copy's source was.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fsrr::bench {

inline void read_tree(const std::string& dir) {
  std::vector<char> buf(1 << 20);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.is_symlink()) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
  }
}

}  // namespace fsrr::bench
