// Turns the records of the BPF programs into trace records: events with resolved paths and
// file ids, threads, fd_bind events, non-file op counts, incompleteness, and the initial
// tree. Records must arrive in ring-buffer order.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "event.h"
#include "fd_tables.h"
#include "initial_tree.h"
#include "path_table.h"
#include "raw_record.h"
#include "trace_writer.h"

namespace fsrr::recorder {

struct decoder_stats {
  uint64_t records = 0;
  uint64_t malformed = 0;   // records that did not parse
  uint64_t unresolved = 0;  // fds or names whose path was unknown
};

class decoder {
 public:
  // `clock_base`: CLOCK_MONOTONIC ns at trace time 0 (header_info.clock_monotonic_ns).
  decoder(trace_writer& w, uint64_t clock_base);

  void on_record(std::span<const uint8_t> record);

  path_table& paths() { return paths_; }
  initial_tree& tree() { return tree_; }
  const decoder_stats& stats() const { return stats_; }
  uint64_t trace_time(uint64_t monotonic_ns) const {
    return monotonic_ns > base_ ? monotonic_ns - base_ : 0;
  }

 private:
  struct task {
    int32_t pid = 0;
    int32_t ppid = 0;
    std::string comm;
    uint64_t files = 0;
    thread_id id = no_id;  // in the trace; added at the task's first event
  };
  struct inode {
    uint32_t gen = 0;  // the kernel's i_generation, once an fd showed it
    uint32_t incarnation = 0;
    bool gen_known = false;
    file_id id = no_id;
    path_id path = no_id;  // where it was last seen
  };
  struct inode_key_hash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  // An fd argument as the trace sees it.
  struct fd_ref {
    file_id file = no_id;
    path_id path = no_id;
    bool nonfile = false;
    fd_kind kind = fd_kind::other;
  };
  struct syscall_ctx;

  void on_syscall(std::span<const uint8_t> record);
  void on_task(std::span<const uint8_t> record);
  void on_fork(std::span<const uint8_t> record);
  void on_exec(std::span<const uint8_t> record);
  void on_exit(std::span<const uint8_t> record);
  void on_cwd(std::span<const uint8_t> record);
  void on_fd(std::span<const uint8_t> record);

  // The per-op mapping (syscall_events.cc).
  void decode(syscall_ctx& c);
  void decode_open(syscall_ctx& c);
  void decode_data(syscall_ctx& c);
  void decode_copy(syscall_ctx& c);
  void decode_fd_table(syscall_ctx& c);
  void decode_name(syscall_ctx& c);
  void decode_process(syscall_ctx& c);
  void decode_invisible(syscall_ctx& c);
  void decode_other(syscall_ctx& c);
  // Fills fd, file (and the fd's path) from fd slot `slot`; false, with the op counted as
  // a non-file op, if the fd is a pipe, socket, tty or the like.
  bool fd_op(syscall_ctx& c, int slot, int64_t fd);
  path_id path_arg(syscall_ctx& c, int slot);
  void stat_result(syscall_ctx& c, path_id p, bool follows);
  void emit(syscall_ctx& c);

  task& task_of(int32_t tid, int32_t pid, uint64_t files);
  thread_id thread_of(int32_t tid, int32_t pid, uint64_t files);
  static std::optional<fd_kind> nonfile_kind(const fsrr_file& f);
  file_id file_of(const fsrr_file& f);
  bool file_is_regular(file_id id) const {
    return id < file_types_.size() && file_types_[id] == (S_IFREG >> 12);
  }
  void note_type(file_id id, uint32_t mode);
  file_id file_of_stat(uint64_t dev, uint64_t ino, uint32_t mode);
  void new_incarnation(inode& n, uint64_t dev, uint64_t ino, uint32_t mode, bool reused);
  fd_ref fd_of(uint64_t files, int64_t fd, const fsrr_file* f);
  observed observe(const fsrr_file& f, const fsrr_attr* a, file_id id) const;
  void bind(uint64_t files, int fd, const fsrr_file& f, file_id id, path_id path, bool cloexec);
  void seen_at(file_id file, const fsrr_file& f, path_id path);
  void unresolved();

  trace_writer& w_;
  uint64_t base_;
  path_table paths_;
  fd_tables fds_;
  initial_tree tree_;
  decoder_stats stats_;
  std::unordered_map<int32_t, task> tasks_;
  std::unordered_map<std::pair<uint64_t, uint64_t>, inode, inode_key_hash> inodes_;
  std::unordered_map<path_id, file_id> at_path_;       // what each path last held
  std::vector<uint8_t> file_types_;                    // S_IFMT >> 12, by file id
  std::unordered_map<int32_t, uint64_t> child_files_;  // fork -> the clone event's aux
  std::unordered_map<int32_t, path_id> exec_path_;     // exec record -> the execve event
};

}  // namespace fsrr::recorder
