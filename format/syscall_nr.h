// Syscall numbers and argument structs newer than the kernel headers fsrr builds against
// (bookworm's), for the recorder's syscall table and the replayer's calls. Since Linux 5.1 new
// syscalls get the same number on every architecture.
#pragma once

#include <cstdint>

namespace fsrr::nr {

constexpr long fchmodat2 = 452;      // 6.6
constexpr long setxattrat = 463;     // 6.13
constexpr long getxattrat = 464;     // 6.13
constexpr long listxattrat = 465;    // 6.13
constexpr long removexattrat = 466;  // 6.13
constexpr long file_getattr = 468;   // 6.17
constexpr long file_setattr = 469;   // 6.17

// struct xattr_args (linux/xattr.h, 6.13): how setxattrat and getxattrat take value, size and
// flags.
struct xattr_args {
  uint64_t value;
  uint32_t size;
  uint32_t flags;
};
static_assert(sizeof(xattr_args) == 16);

}  // namespace fsrr::nr
