// The trace `cp -a SRC DST` by coreutils 9 records, written without recording it: one model of
// cp's syscalls (strace -f cp -a on coreutils 9.1, running as root, on tmpfs) that the tests
// and the benchmarks share. The source tree is either a real directory (disk_tree) or a
// numbered one held in memory (numbered_tree).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace_writer.h"

namespace fsrr::model {

// A tree cp -a walks: what lstat(2) says of a path, and a directory's entries in the order cp
// copies them (by inode number).
class source_tree {
 public:
  virtual ~source_tree() = default;
  virtual bool lstat(const std::string& path, struct stat& st) const = 0;
  virtual std::vector<std::string> entries(const std::string& dir) const = 0;
};

// The real file system.
class disk_tree : public source_tree {
 public:
  bool lstat(const std::string& path, struct stat& st) const override;
  std::vector<std::string> entries(const std::string& dir) const override;
};

// DIR holding regular files f0, f1, ... of the given sizes, mode 0644, owned by root, all with
// atime and mtime `time_ns`; DIR's parents exist and are not recorded.
class numbered_tree : public source_tree {
 public:
  numbered_tree(std::string dir, std::vector<uint64_t> sizes,
                int64_t time_ns = 1'600'000'000'000'000'000);
  bool lstat(const std::string& path, struct stat& st) const override;
  std::vector<std::string> entries(const std::string& dir) const override;

 private:
  std::string dir_;
  std::vector<uint64_t> sizes_;
  int64_t time_ns_;
};

struct cp_options {
  std::string writer = "fsrr_cp_model";  // the header's writer
  uint64_t start_ns = 1'000'000;         // the first event's time
  uint64_t step_ns = 2'000;              // events 2 µs apart, as cp on tmpfs
};

// Writes OUT (replacing it): the recording of `cp -a SRC DST` over `tree`, DST not existing.
// SRC and DST are canonical absolute paths, as the kernel resolved them. Regular files and
// directories only (anything else throws std::runtime_error, as a missing SRC does).
void write_cp_a(const std::string& out, const source_tree& tree, const std::string& src,
                const std::string& dst, const cp_options& options = {});

}  // namespace fsrr::model
