#include "progress_line.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace fsrr {

progress_line::progress_line(bool wanted)
    : on_(wanted && ::isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()), last_() {}

progress_line::~progress_line() { clear(); }

void progress_line::update(const std::string& text, uint64_t done, uint64_t total) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(100) && done != total) return;
  last_ = now;
  std::string eta;
  const double secs = std::chrono::duration<double>(now - start_).count();
  if (done > 0 && total > done && secs > 0.5)
    eta = fmt::format(", ETA {:.0f} s", secs * (total - done) / done);
  fmt::print(stderr, "\r\033[K{}{}", text, eta);
  std::fflush(stderr);
  drawn_ = true;
}

void progress_line::clear() {
  if (!drawn_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace fsrr
