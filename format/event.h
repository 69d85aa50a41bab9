// What a trace holds, as plain data: events, the interned tables they refer to, the initial
// tree, and the trace-wide header and summary. Writer and reader both speak these types.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "ops.h"

namespace fsrr {

// Table ids are dense and start at 1; 0 means "none".
using path_id = uint32_t;
using string_id = uint32_t;
using file_id = uint32_t;
using thread_id = uint32_t;
inline constexpr uint32_t no_id = 0;
inline constexpr path_id root_path = 1;  // "/", always present

// One syscall (or pseudo-op), decoded. Fields the op does not carry (ops.def) stay at their
// defaults; that is also how they are stored: absent.
struct event {
  uint64_t ts = 0;   // entry time, ns since the trace clock base
  uint64_t dur = 0;  // ns from entry to exit
  int64_t result = 0;  // syscall return value (negative errno on failure)
  thread_id thread = no_id;
  op kind = op::read;
  int32_t fd = -1;
  int32_t fd2 = -1;
  file_id file = no_id;
  file_id file2 = no_id;
  path_id path = no_id;
  path_id path2 = no_id;
  int64_t offset = 0;
  int64_t offset2 = 0;
  uint64_t size = 0;
  uint32_t flags = 0;
  uint32_t mode = 0;
  uint64_t aux = 0;
  // Which way a data or sync op was submitted (ops carrying F_VIA): 0 a syscall of its own;
  // else an engine's request, with its submission's details (via_* below).
  uint32_t via = 0;

  bool operator==(const event&) const = default;
};

// event::via: the engine in its low two bits, then what the request was submitted with.
enum class engine : uint8_t { syscall = 0, io_uring = 1, aio = 2, mapped = 3 };
inline constexpr uint32_t via_engine_mask = 3;
inline constexpr uint32_t via_sqe_shift = 2;  // io_uring: the SQE's IOSQE_* flags (6 bits)
inline constexpr uint32_t via_sqe_mask = 0x3f;
inline constexpr uint32_t via_fixed_buffer = 1u << 8;  // io_uring: READ_FIXED/WRITE_FIXED
inline constexpr uint32_t via_sqpoll = 1u << 9;        // io_uring: submitted by its SQ thread
inline constexpr uint32_t via_queue_shift = 10;        // the ring or AIO context, from 1
inline constexpr uint32_t via_max_queue = (1u << 22) - 1;
// IOSQE_* bits as via keeps them (linux/io_uring.h; their values never change).
inline constexpr uint32_t sqe_fixed_file = 1, sqe_drain = 2, sqe_link = 4, sqe_hardlink = 8,
                          sqe_async = 16;
inline engine engine_of(uint32_t via) { return static_cast<engine>(via & via_engine_mask); }
inline uint32_t queue_of(uint32_t via) { return via >> via_queue_shift; }
inline uint32_t sqe_flags_of(uint32_t via) { return (via >> via_sqe_shift) & via_sqe_mask; }
inline uint32_t make_via(engine en, uint32_t queue, uint32_t sqe_flags = 0, uint32_t extra = 0) {
  return static_cast<uint32_t>(en) | (sqe_flags & via_sqe_mask) << via_sqe_shift | extra |
         std::min(queue, via_max_queue) << via_queue_shift;
}

// A file-system object as the kernel identifies it. Inode numbers are reused after unlink,
// so generation (or ctime) is part of the identity.
struct file_info {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint32_t gen = 0;
  uint32_t type = 0;  // S_IFMT bits; 0 if unknown
  uint16_t host = 0;  // header_info::hosts index: two hosts' disks reuse device and inode numbers
  bool operator==(const file_info&) const = default;
};

struct thread_info {
  int32_t tid = 0;        // as the thread saw it, in its own pid namespace
  int32_t pid = 0;        // thread group id
  int32_t ppid = 0;       // parent process at creation; 0 if outside the thread's namespace
  string_id comm = no_id;
  uint32_t fd_table = 0;  // which fd table the thread used when first seen
  int32_t host_tid = 0;   // tid and pid as the recorder saw them: unique across containers
  int32_t host_pid = 0;   // (0 in traces older than format 1.1: same as tid and pid)
  uint32_t root = 0;      // the root it started from (trace_reader::roots(), from 1)
  uint16_t host = 0;      // header_info::hosts index (a merged trace); 0 otherwise
  bool operator==(const thread_info&) const = default;
};

// A root directory processes of the trace had: their absolute paths start there (a chroot, a
// container's root). Root 1's "/" is root_path; every other root has a top path of its own,
// a path without parent, named "rootN". A trace with one root reads like one without.
struct trace_root {
  path_id top = root_path;
  uint64_t mnt_ns = 0;      // inode of its mount namespace
  uint64_t dev = 0;         // the root directory's device and inode
  uint64_t ino = 0;
  string_id where = no_id;  // where the recorder saw it: "/srv/jail" ("/" from another mount
                            // namespace, where it may be elsewhere)
  bool operator==(const trace_root&) const = default;
};

// A path is a chain of components: (parent, name). "/" is root_path with an empty name.
// The name points into storage owned by the trace_reader that handed it out.
struct path_entry {
  path_id parent = no_id;
  std::string_view name;
};

// One object of the initial tree, as it was before the workload touched it.
struct tree_entry {
  path_id path = no_id;
  uint32_t mode = 0;  // st_mode: type and permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t allocated = 0;  // bytes actually allocated (st_blocks * 512)
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint32_t nlink = 1;
  uint32_t link_group = 0;  // entries sharing a non-zero group are hard links of one inode
  string_id target = no_id;  // symlink target
  file_id file = no_id;      // the inode in the file table, when the recorder knows it
  struct xattr {
    string_id name = no_id;
    uint32_t size = 0;
    bool operator==(const xattr&) const = default;
  };
  std::vector<xattr> xattrs;
  struct extent {
    uint64_t offset = 0;
    uint64_t length = 0;
    bool operator==(const extent&) const = default;
  };
  // Data extents of a sparse file (allocated < size); empty means "all data".
  std::vector<extent> extents;
  bool operator==(const tree_entry&) const = default;
};

enum class trace_kind : uint8_t { recording = 0, snapshot = 1 };

// An io_uring request on a registered (fixed) file names it as this fd plus its index.
inline constexpr int32_t fixed_fd_base = 1 << 16;
// A file written through a shared mapping is written through this fd plus a number of its own.
inline constexpr int32_t mapped_fd_base = 1 << 17;

// Why a trace cannot be replayed exactly, beyond lost events.
enum incomplete_bit : uint64_t {
  incomplete_compat_syscalls = 1u << 0,  // 32-bit calls were counted, not decoded
  incomplete_io_uring = 1u << 1,
  incomplete_aio = 1u << 2,
  incomplete_shared_mmap = 1u << 3,  // writable shared mapping of a traced file
  incomplete_path_unresolved = 1u << 4,
  incomplete_path_filter = 1u << 5,  // a --path directory was replaced while the kernel filtered
  incomplete_uring_ops = 1u << 6,    // io_uring requests of kinds fsrr does not replay yet
};

// One host of a merged trace (fsrr merge): the header of the trace it came from.
struct host_info {
  std::string name;
  std::string kernel;
  std::string trace_id;
  std::vector<std::string> command;
  uint64_t clock_monotonic_ns = 0;  // its own trace's clock pair at its trace time 0
  int64_t clock_realtime_ns = 0;
  uint64_t offset_ns = 0;  // where its trace time 0 falls on the merged trace's clock
  uint32_t cpus = 0;
  bool operator==(const host_info&) const = default;
};

struct header_info {
  uint16_t format_major = 0;  // filled by the writer
  uint16_t format_minor = 0;
  // Event times are multiples of it. Filled by the reader; the writer ignores it and writes
  // writer_options::time_unit_ns.
  uint32_t time_unit_ns = 1;
  std::string writer;         // "fsrr 0.1.0"
  trace_kind kind = trace_kind::recording;
  uint64_t clock_monotonic_ns = 0;  // CLOCK_MONOTONIC at trace ts 0
  int64_t clock_realtime_ns = 0;    // CLOCK_REALTIME at the same instant
  std::string hostname;
  std::string kernel;
  std::vector<std::string> command;
  uint32_t page_size = 0;
  uint32_t cpus = 0;
  std::string derived;  // how a trace made from another was made; empty for a recording
  std::string key_id;   // anonymized: the id of the key (never the key)
  // 32 random hex digits naming the recording; a writer given none makes one, a transform
  // passes its input's on. Empty in traces before 1.3.
  std::string trace_id;
  // A merged trace's hosts (thread_info::host, file_info::host index them); empty for a trace of
  // one host, the one this header describes. Since 1.4.
  std::vector<host_info> hosts;
};

// How reports name a process or thread of host `host`: HOST:PID, HOST:TID in a trace of several
// hosts (whose pids repeat across hosts), the pid or tid alone in a trace of one.
// A merged trace's host name as merge made it unique: the recorded name and merge's "#N"
// ("vm#2" -> {"vm", "#2"}; "vm" -> {"vm", ""}).
inline std::pair<std::string, std::string> host_name_parts(const std::string& name) {
  const size_t hash = name.rfind('#');
  if (hash == std::string::npos || hash == 0 || hash + 1 == name.size()) return {name, ""};
  for (size_t i = hash + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return {name, ""};
  return {name.substr(0, hash), name.substr(hash)};
}

inline std::string host_name(const header_info& h, uint16_t host) {
  return h.hosts.size() > 1 && host < h.hosts.size() ? h.hosts[host].name : std::string();
}
inline std::string host_prefix(const header_info& h, uint16_t host) {
  const std::string n = host_name(h, host);
  return n.empty() ? n : n + ":";
}

// A root `merge --shared` made for one host's own paths has `where` "host:DIR", DIR the
// directory beneath TARGET/hosts it replays into (its host's name, when that is a plain file
// name). The DIR of such a root, or nullopt for any other root (or a DIR no directory may
// have: a trace is untrusted).
inline constexpr std::string_view host_root_tag = "host:";
inline std::optional<std::string> host_root_name(std::string_view where) {
  if (where.substr(0, host_root_tag.size()) != host_root_tag) return std::nullopt;
  const std::string_view dir = where.substr(host_root_tag.size());
  if (dir.empty() || dir == "." || dir == ".." || dir.size() > 255 ||
      dir.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos)
    return std::nullopt;
  return std::string(dir);
}

// Ops on pipes, sockets, ttys and the like: counted by kind, never replayed.
enum class fd_kind : uint8_t { pipe = 0, socket = 1, tty = 2, other = 3, count };
std::string_view name(fd_kind k);

}  // namespace fsrr
