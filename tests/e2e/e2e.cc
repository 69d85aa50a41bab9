#include "e2e.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include <catch2/catch.hpp>

namespace fsrr::test {

bool can_record() {
  struct stat st;
  const bool ok = ::geteuid() == 0 && ::stat("/sys/kernel/btf/vmlinux", &st) == 0;
  if (!ok && std::getenv("CI") && std::string(std::getenv("CI")) == "true")
    FAIL("recording needs root and /sys/kernel/btf/vmlinux, and CI=true forbids skipping");
  if (!ok) WARN("skipped: recording needs root and /sys/kernel/btf/vmlinux");
  return ok;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const std::string& path, size_t bytes, char fill) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << std::string(bytes, fill);
}

}  // namespace fsrr::test
