// What a replay leaves out of what it creates unless asked (--owners, --keep-privileged): a
// shared trace must not hand whoever replays it a set-uid binary, a file capability or a
// trusted xattr. Device nodes are never created, whatever the options: a later replayed open
// of one would read or write a disk.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string_view>

namespace fsrr {

struct privilege_options {
  bool owners = false;           // chown to the recorded uid/gid (otherwise owners stay ours)
  bool keep_privileged = false;  // set-uid/set-gid bits, security.* and trusted.* xattrs
};

inline constexpr uint32_t set_id_bits = S_ISUID | S_ISGID;

// security.capability, security.selinux, trusted.overlay.*: names only privilege may set.
inline bool privileged_xattr(std::string_view name) {
  return name.starts_with("security.") || name.starts_with("trusted.");
}

// The mode a replay gives: the recorded one, less set-id bits unless they are kept.
inline uint32_t replay_mode(uint32_t mode, const privilege_options& p) {
  return p.keep_privileged ? mode : mode & ~set_id_bits;
}

}  // namespace fsrr
