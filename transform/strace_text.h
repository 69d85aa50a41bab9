// The text of an strace log (`strace -f -ttt -T -y`, or -yy) as values: a call's arguments,
// numbers, flag names, C-escaped strings, -y's annotations of fds, stat structs, paths.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fsrr::transform::strace {

struct call {
  int32_t pid = 0;
  uint64_t ts = 0;  // ns since the epoch
  std::string name;
  std::vector<std::string> args;
  std::string result;  // after "= ", before the duration
  uint64_t dur = 0;
};

// Splits the arguments of a call at the commas outside strings, brackets, braces and the
// <...> annotations of -y.
std::vector<std::string> split_args(std::string_view s);

// "1700000000.123456" -> ns
std::optional<uint64_t> timestamp(std::string_view t);

// strace's C escapes undone.
std::string unescape(std::string_view s);

// The string a quoted argument stands for.
std::string unquote(std::string_view s);

// A decimal, hex (0x) or octal (0...) number, with its sign; 0 for what is none.
int64_t number(std::string_view s);

// "O_RDONLY|O_CLOEXEC", "AT_SYMLINK_NOFOLLOW", "0x100": the bits of the names this table has.
uint64_t bits(std::string_view s, const std::map<std::string_view, uint64_t>& names);

// The names of the flags of open, the *at calls (AT_* and RENAME_*), clone, mmap.
extern const std::map<std::string_view, uint64_t> open_flags, at_flags, clone_flags, map_flags,
    prot_flags;

// "ENOENT" -> ENOENT (EIO for a name this libc does not know).
int errno_of(std::string_view name);

// A -y annotated fd or dirfd: "3</dev/shm/a>", "AT_FDCWD</home>", "5<pipe:[1234]>".
struct fd_text {
  int64_t fd = -1;
  bool at_fdcwd = false;
  std::string what;  // the annotation; "" without -y
};
fd_text fd_arg(std::string_view s);

// "st_mode=S_IFREG|0644" or "stx_mode=..." in a stat struct: type and permission bits.
std::optional<uint32_t> stat_mode(std::string_view st);
// "st_size=..." or "stx_size=..." in a stat struct.
std::optional<uint64_t> stat_size(std::string_view st);

// The sum of the iov_len of "[{iov_base=..., iov_len=10}, ...]".
uint64_t iov_bytes(std::string_view v);

// "[100 => 200]", "[100]", "NULL": the offset a pointer held before the call, -1 for NULL.
int64_t pointed(std::string_view v);

// "/a/./b/../c" -> "/a/c" (lexically: the kernel followed what links there were). A path
// ends at its first NUL, as the kernel reads it (a log's "\0" is no name's part).
std::string normal(std::string_view p);

// Under /dev (but /dev/shm), /proc or /sys: no storage.
bool pseudo(std::string_view p);

}  // namespace fsrr::transform::strace
