// A block device that keeps a log of every write and flush it receives, in order: what crash
// testing (crashtest.h) builds power-cut states from. This kernel has no device-mapper (no
// dm-log-writes), nbd or ublk; it has loop devices and FUSE. A loop device here has a volatile
// write cache without FUA, so the block layer sends every FUA write as a write and a flush, and
// the loop driver carries out a flush as an fsync of its backing file (docs/kernel-notes.md).
// The backing file is served by a FUSE file system of fsrr's own, in a child process, without
// the kernel's writeback cache: each write the loop device makes reaches the child as a write,
// each flush as an fsync, and the child applies the write to the image and appends it to the
// log.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "result.h"

namespace fsrr::lab {

// One record of the log: a write of `length` bytes at `offset` (its bytes at `data_at` in the
// data file), or a flush (every write before it is on the medium).
struct block_record {
  uint64_t offset = 0;
  uint64_t data_at = 0;
  uint32_t length = 0;
  uint32_t flush = 0;  // 1: a flush; offset and length 0
};

class logged_device {
 public:
  // Serves `image` (a file system image fsrr made; nothing else is ever written) from a child
  // process on a FUSE mount below `dir` (a directory fsrr made), logs into `dir`, and attaches a
  // loop device to the served file. On an error, what was made of it is gone again.
  static result<std::unique_ptr<logged_device>> make(const std::string& image,
                                                     const std::string& dir);
  ~logged_device();  // detach()
  logged_device(const logged_device&) = delete;
  logged_device& operator=(const logged_device&) = delete;

  const std::string& device() const { return loop_; }  // "/dev/loop3"
  // Records logged so far: where a crash point stands in the log.
  uint64_t logged() const;
  // Detaches the loop device (whatever the file system on it still had to write is written
  // first), unmounts the FUSE file system and ends the child. Then records() may be read.
  result<void> detach();
  // The log, once detached; `data` is the file holding the written bytes.
  result<std::vector<block_record>> records() const;
  const std::string& data_path() const { return data_; }

 private:
  logged_device() = default;
  std::string dir_, mount_, loop_, index_, data_;
  int child_ = -1;
  bool mounted_ = false;    // the FUSE file system
  void* shared_ = nullptr;  // the child's count of records, in memory both see
};

// Writes the log's records [from, to) onto `image` (an open file): their writes, in order.
result<void> apply_records(int image, int data, const std::vector<block_record>& log, size_t from,
                           size_t to);

// Copies the file `from` to `to` (created or truncated), its holes kept: only the extents that
// hold data are read and written.
result<void> copy_sparse(const std::string& from, const std::string& to);

}  // namespace fsrr::lab
