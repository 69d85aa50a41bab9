// A progress line on stderr when it is a terminal: redrawn at most ten times a second, with
// an ETA once the rate is known. Does nothing when disabled or not a TTY.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fsrr {

class progress_line {
 public:
  explicit progress_line(bool wanted);
  ~progress_line();
  void update(const std::string& text, uint64_t done, uint64_t total);
  void clear();

 private:
  bool on_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace fsrr
