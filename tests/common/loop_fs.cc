#include "loop_fs.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "temp_dir.h"

namespace fsrr::test {

int run(const std::string& command) {
  const int s = std::system(command.c_str());
  return s == -1 ? -1 : WEXITSTATUS(s);
}

bool can_mount() { return ::geteuid() == 0; }

bool require_root(const char* what) {
  if (can_mount()) return true;
  const char* ci = std::getenv("CI");
  if (ci && std::string(ci) == "true")
    throw std::runtime_error(fmt::format("{} needs root, and CI=true forbids skipping", what));
  fmt::print(stderr, "skipped: {} needs root\n", what);
  return false;
}

loop_fs::loop_fs(const std::string& type, unsigned size_mib, const std::string& options)
    : type_(type) {
  char dir[] = "/dev/shm/fsrr-mnt.XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error("mkdtemp failed in /dev/shm");
  mount_point_ = dir;
  std::string cmd;
  if (type == "tmpfs") {
    cmd = fmt::format("mount -t tmpfs -o size={}m{}{} tmpfs {}", size_mib,
                      options.empty() ? "" : ",", options, mount_point_);
  } else {
    image_ = mount_point_ + ".img";
    const std::string mkfs = type == "ext4"    ? "mkfs.ext4 -q -F"
                             : type == "xfs"   ? "mkfs.xfs -q -f"
                             : type == "btrfs" ? "mkfs.btrfs -q -f"
                                               : "";
    if (mkfs.empty()) throw std::invalid_argument("unknown file system " + type);
    if (run(fmt::format("truncate -s {}M {} && {} {} >/dev/null 2>&1", size_mib, image_, mkfs,
                        image_)) != 0) {
      ::unlink(image_.c_str());
      ::rmdir(mount_point_.c_str());
      throw std::runtime_error(fmt::format("{} of {} failed", mkfs, image_));
    }
    // -o loop: mount attaches a loop device with autoclear, so umount frees it.
    cmd = fmt::format("mount -o loop{}{} {} {}", options.empty() ? "" : ",", options, image_,
                      mount_point_);
  }
  if (run(cmd + " 2>/dev/null") != 0) {
    if (!image_.empty()) ::unlink(image_.c_str());
    ::rmdir(mount_point_.c_str());
    throw std::runtime_error("failed: " + cmd);
  }
  mounted_ = true;
}

loop_fs::~loop_fs() {
  if (mounted_) {
    // Lazy unmount as a fallback: a test that failed with a file still open must not leave
    // the mount behind.
    if (run(fmt::format("umount {} 2>/dev/null", mount_point_)) != 0)
      run(fmt::format("umount -l {} 2>/dev/null", mount_point_));
  }
  if (!image_.empty()) ::unlink(image_.c_str());
  ::rmdir(mount_point_.c_str());
}

}  // namespace fsrr::test
