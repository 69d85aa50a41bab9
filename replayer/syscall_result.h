// Small helpers the replay's op families share: a syscall's result as the trace stores it
// (-errno on failure), an fd closed on every way out of a scope, and the buffers they read
// into and write from.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fsrr {

inline constexpr size_t sink_bytes = size_t{256} << 20;    // reserved, touched only as used
inline constexpr size_t max_io_bytes = size_t{256} << 20;  // larger single calls are cut

// Anonymous memory, reserved and not committed until touched; empty if refused.
inline std::span<uint8_t> map_buffer(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return {};
  return {static_cast<uint8_t*>(p), bytes};
}

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
