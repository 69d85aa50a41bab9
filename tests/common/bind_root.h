// A throwaway chroot made of bind mounts of this machine's /usr and /etc (read-only), /dev,
// /proc and /sys, the usual /bin, /lib... links, and empty /data and /tmp: enough to run the
// programs the tests record, and fsrr itself when the build tree is bound in too. Its mounts
// live in a mount namespace of the test process's own (made on first use), so they vanish with
// the process however it ends; the destructor also unmounts them, before the directory goes.
#pragma once

#include <string>
#include <vector>

namespace fsrr::test {

// Moves this process into a mount namespace of its own, with every mount private: mounts it
// makes are seen by nobody else and vanish with it. Once per process; before any thread starts.
void private_mounts();

class bind_root {
 public:
  // `dir`: an empty directory (a temp_dir). `also`: directories bound read-write at their own
  // path inside (the build tree, a test's work directory).
  explicit bind_root(const std::string& dir, const std::vector<std::string>& also = {});
  ~bind_root();
  bind_root(const bind_root&) = delete;
  bind_root& operator=(const bind_root&) = delete;

  const std::string& path() const { return dir_; }
  std::string operator/(const std::string& rel) const { return dir_ + "/" + rel; }

 private:
  void bind(const std::string& from, const std::string& at, bool recursive, bool read_only);
  std::string dir_;
  std::vector<std::string> mounts_;  // in the order made
};

}  // namespace fsrr::test
