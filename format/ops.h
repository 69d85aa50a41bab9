// The operation model: one enum generated from ops.def, the fields each op carries and what
// replay does with it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fsrr {

// Event fields an op may carry besides the ones every event has (thread, ts, dur, result).
enum field_bit : uint32_t {
  F_FD = 1u << 0,
  F_FD2 = 1u << 1,
  F_FILE = 1u << 2,
  F_FILE2 = 1u << 3,
  F_PATH = 1u << 4,
  F_PATH2 = 1u << 5,
  F_OFFSET = 1u << 6,
  F_OFFSET2 = 1u << 7,
  F_SIZE = 1u << 8,
  F_FLAGS = 1u << 9,
  F_MODE = 1u << 10,
  F_AUX = 1u << 11,
  F_VIA = 1u << 12,  // may be a storage engine's request (event::via)
};

enum class op_class : uint8_t {
  open,          // creates an fd from a path
  close,         // releases an fd
  read,          // moves data from a file
  write,         // moves data into a file
  seek,          // moves an fd's position
  copy,          // moves data between two fds inside the kernel
  ioctl,         // FICLONE/FICLONERANGE are replayed, other commands counted
  hint,          // advice, locks: replayed, no data
  dir,           // directory listing
  sync,          // durability
  resize,        // truncate, fallocate
  name,          // creates, removes or renames names
  meta,          // reads metadata
  attr,          // changes metadata
  xattr,         // extended attributes
  fd_table,      // dup family, fcntl, close_range, fd_bind
  process,       // clone/exec/exit/chdir: structure, not I/O
  unreplayable,  // mmap, AIO, io_uring: I/O that syscall tracing cannot see
  stream,        // bytes through pipes and sockets: the data flow, never replayed
};

enum class op : uint16_t {
#define OP(id, name, fields, cls) id,
#include "ops.def"
#undef OP
};

inline constexpr size_t op_count = 0
#define OP(id, name, fields, cls) +1
#include "ops.def"
#undef OP
    ;

struct op_info {
  std::string_view name;
  uint32_t fields;
  op_class cls;
};

inline constexpr std::array<op_info, op_count> op_table = {{
#define OP(id, name, fields, cls) {name, fields, op_class::cls},
#include "ops.def"
#undef OP
}};

constexpr const op_info& info(op o) { return op_table[static_cast<size_t>(o)]; }
constexpr std::string_view name(op o) { return info(o).name; }
constexpr bool has(op o, uint32_t field) { return (info(o).fields & field) != 0; }
std::optional<op> op_from_name(std::string_view name);

// The ops whose aux is a string id: a symlink's target, an xattr's name (0: none recorded).
constexpr bool aux_is_string(op o) {
  return has(o, F_AUX) &&
         (o == op::symlink || o == op::symlinkat || info(o).cls == op_class::xattr);
}

// In the mode of the set-xattr ops: the value was a POSIX ACL with these permission bits.
inline constexpr uint32_t acl_mode_present = 1u << 20;

// Special values of utimensat-style times (offset/offset2 of the attr ops).
inline constexpr int64_t time_now = -1;
inline constexpr int64_t time_omit = -2;

}  // namespace fsrr
