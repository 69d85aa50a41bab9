// A file system of a given type on a loop device, backed by an image in /dev/shm, mounted on
// a fresh directory; unmounted and deleted when the object goes, even when a test fails.
#pragma once

#include <string>

namespace fsrr::test {

// True when tests may create loop devices and mount (root). Under CI=true a test that would
// skip must fail instead: call require_root() there.
bool can_mount();
// Fails the calling test with a clear message when not root and CI=true; returns false (skip)
// when not root elsewhere.
bool require_root(const char* what);

class loop_fs {
 public:
  // type: "tmpfs", "ext4", "xfs" or "btrfs"; options: extra mount options ("compress=zstd").
  explicit loop_fs(const std::string& type, unsigned size_mib = 512,
                   const std::string& options = "");
  ~loop_fs();
  loop_fs(const loop_fs&) = delete;
  loop_fs& operator=(const loop_fs&) = delete;

  const std::string& path() const { return mount_point_; }
  const std::string& type() const { return type_; }

 private:
  std::string type_, image_, mount_point_;
  bool mounted_ = false;
};

// Runs a shell command; returns its exit status (-1 if it could not run).
int run(const std::string& command);

}  // namespace fsrr::test
