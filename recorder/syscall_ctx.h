// What the decoder's syscall families share: one syscall being decoded (decoder::syscall_ctx),
// how its user-memory copies read, and the flag values the decoders test. Private to
// recorder/syscall_*.cc.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

#include "decoder.h"
#include "kernel_constants.h"
#include "syscall_nr.h"
#include "syscall_table.h"

namespace fsrr::recorder {

inline constexpr uint32_t fmode_created = FSRR_FMODE_CREATED;  // this open made the file
inline constexpr uint32_t rwf_append = 0x10, rwf_noappend = 0x20;
inline constexpr uint64_t ficlone = FSRR_FICLONE, ficlonerange = FSRR_FICLONERANGE;
inline constexpr uint32_t close_range_cloexec = 1u << 2;
inline constexpr uint32_t rename_noreplace = 1, rename_exchange = 2;
inline constexpr int at_removedir = 0x200;

template <class T>
bool user_as(std::span<const uint8_t> user, T& out) {
  if (user.size() < sizeof(T)) return false;
  std::memcpy(&out, user.data(), sizeof(T));
  return true;
}

// A struct of which the BPF side copies only the first `len` bytes: the rest is zero.
template <class T>
bool user_prefix(std::span<const uint8_t> user, T& out, size_t len) {
  if (user.size() < len || len > sizeof(T)) return false;
  std::memset(&out, 0, sizeof(T));
  std::memcpy(&out, user.data(), len);
  return true;
}

inline int64_t ns(int64_t sec, int64_t nsec) {
  return sec * 1000000000 + nsec;
}

// utime/utimes/utimensat times as offset (atime) and offset2 (mtime).
inline void decode_times(op kind, std::span<const uint8_t> user, event& e) {
  e.offset = e.offset2 = time_now;  // a NULL times pointer
  if (kind == op::utime) {
    int64_t t[2];
    if (user_as(user, t)) e.offset = ns(t[0], 0), e.offset2 = ns(t[1], 0);
  } else if (kind == op::utimensat) {
    struct timespec t[2];
    if (!user_as(user, t)) return;
    int64_t* out[2] = {&e.offset, &e.offset2};
    for (int i = 0; i < 2; ++i)
      *out[i] = t[i].tv_nsec == UTIME_NOW    ? time_now
                : t[i].tv_nsec == UTIME_OMIT ? time_omit
                                             : ns(t[i].tv_sec, t[i].tv_nsec);
  } else {  // utimes, futimesat: struct timeval[2]
    struct timeval t[2];
    if (user_as(user, t))
      e.offset = ns(t[0].tv_sec, t[0].tv_usec * 1000),
      e.offset2 = ns(t[1].tv_sec, t[1].tv_usec * 1000);
  }
}

inline bool is_write(op o) {
  return info(o).cls == op_class::write;
}


struct decoder::syscall_ctx {
  const fsrr_syscall& h;
  const record_items& it;
  const fsrr_sc& cap;
  task& t;
  event e;
  path_id fd_path = no_id;   // the path behind e.fd
  path_id fd2_path = no_id;  // and behind e.fd2
  // Bytes the call moved: f_pos and *loff were advanced by this much.
  uint64_t moved() const { return h.ret > 0 ? static_cast<uint64_t>(h.ret) : 0; }
};

}  // namespace fsrr::recorder
