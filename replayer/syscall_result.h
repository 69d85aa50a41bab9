// Small helpers the replay's op families share: a syscall's result as the trace stores it
// (-errno on failure), and an fd closed on every way out of a scope.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace fsrr {

inline int64_t sys(int64_t r) {
  return r < 0 ? -errno : r;
}

struct owned_fd {
  int fd;
  explicit owned_fd(int f) : fd(f) {}
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
  ~owned_fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace fsrr
