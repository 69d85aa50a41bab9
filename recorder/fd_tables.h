// What the traced processes' fds refer to, one table per kernel files_struct (threads and
// CLONE_FILES children share one; fork copies it; exec drops close-on-exec entries), and
// each fs_struct's cwd.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "event.h"

namespace fsrr::recorder {

struct fd_entry {
  uint64_t kfile = 0;  // struct file *: tells a reused fd number from the one we know
  file_id file = no_id;
  path_id path = no_id;
  bool cloexec = false;
  bool nonfile = false;  // a pipe, socket, tty, device or pseudo-fs file: ops are only counted
  fd_kind kind = fd_kind::other;
  // The streams a nonfile fd's bytes go to and come from (stream_write/stream_read events);
  // no_id where they are not followed (a TCP socket, a tty, /dev/null written).
  file_id stream_out = no_id;
  file_id stream_in = no_id;
};

class fd_tables {
 public:
  // The dense id a table has in the trace (thread_info.fd_table, clone/execve aux).
  uint32_t id_of(uint64_t files);
  bool has(uint64_t files) const { return tables_.count(files) != 0; }

  const fd_entry* find(uint64_t files, int fd) const;
  // The entry of `fd` for the open file `kfile`: the fd's binding, or the one a later bind
  // displaced. Threads sharing a table race: a close releases the number at its entry and is
  // sent at its exit, so another thread's open may reuse the number, and be decoded, first.
  // Ops that still held the old file (the close itself) are decoded after that open.
  const fd_entry* find(uint64_t files, int fd, uint64_t kfile) const;
  // The lowest fd of the table bound to the open file `kfile`, -1 if none (a linear scan).
  int fd_of_file(uint64_t files, uint64_t kfile) const;
  void bind(uint64_t files, int fd, const fd_entry& e);
  void unbind(uint64_t files, int fd);
  // A close of `kfile` at `fd`: the binding it ends, which may be the displaced one.
  void unbind(uint64_t files, int fd, uint64_t kfile);
  void unbind_range(uint64_t files, uint32_t first, uint32_t last);
  void set_cloexec(uint64_t files, int fd, bool on);
  void cloexec_range(uint64_t files, uint32_t first, uint32_t last);

  void copy(uint64_t from, uint64_t to);  // fork without CLONE_FILES, unshare
  void exec(uint64_t files);              // close-on-exec
  void release(uint64_t files);           // the last task using it exited

  size_t entries() const;  // fd slots and cwds held, for memory accounting

  path_id cwd(uint64_t fs) const;
  void set_cwd(uint64_t fs, path_id p) { cwd_[fs] = p; }
  void copy_cwd(uint64_t from, uint64_t to);
  void release_fs(uint64_t fs) { cwd_.erase(fs); }

 private:
  struct table {
    uint32_t id = 0;
    std::vector<fd_entry> fds;
    std::unordered_map<int, fd_entry> displaced;  // one per fd at most: rare, and short-lived
  };
  table& get(uint64_t files);

  std::unordered_map<uint64_t, table> tables_;
  std::unordered_map<uint64_t, path_id> cwd_;
  uint32_t next_id_ = 0;
};

}  // namespace fsrr::recorder
