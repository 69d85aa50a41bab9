// A temporary directory owned by one test: created fresh, removed with everything in it.
// On tmpfs unless a test names another base.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fsrr::test {

class temp_dir {
 public:
  explicit temp_dir(const std::string& base = "/dev/shm");
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The whole of a file's bytes (empty when it cannot be read).
std::vector<uint8_t> file_bytes(const std::string& path);

// rm -rf without following symlinks and without crossing mount points.
void remove_tree(const std::string& path);

}  // namespace fsrr::test
