// Turns the records of the BPF programs into trace records: events with resolved paths and
// file ids, threads, fd_bind events, non-file op counts, incompleteness, and the initial
// tree. Records must arrive in ring-buffer order.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "event.h"
#include "fd_tables.h"
#include "hash.h"
#include "initial_tree.h"
#include "inode_table.h"
#include "path_table.h"
#include "pseudo_fs.h"
#include "raw_record.h"
#include "roots.h"
#include "trace_writer.h"

namespace fsrr::recorder {

struct decoder_stats {
  uint64_t records = 0;
  uint64_t malformed = 0;   // records that did not parse
  uint64_t unresolved = 0;  // fds or names whose path was unknown
  uint64_t filtered = 0;    // events outside the kept directories (--path)
};

class decoder {
 public:
  // `clock_base`: CLOCK_MONOTONIC ns at trace time 0 (header_info.clock_monotonic_ns);
  // `roots`: the root directories of the traced processes, as fsrr holds them.
  decoder(trace_writer& w, uint64_t clock_base, root_registry& roots);

  void on_record(std::span<const uint8_t> record);
  // --path: only events on paths beneath these directories (absolute, canonical, as fsrr
  // sees them; a root elsewhere keeps the part below it) and their initial tree are kept.
  // `replaced` is called once if one of them (or a directory above) is removed or renamed:
  // the in-kernel filter, which knows them by inode, no longer can tell.
  void keep_only(std::vector<std::string> dirs, std::function<void()> replaced);
  // The programs follow io_uring requests (probes::uring): io_uring_setup no longer makes the
  // trace incomplete; a request the decoder cannot replay does.
  void follow_uring(bool on) { uring_ = on; }
  // The programs follow write faults on shared file mappings (probes::mapped_writes): a
  // writable shared mapping no longer makes the trace incomplete.
  void follow_mapped_writes(bool on) { mapped_writes_ = on; }
  // The recording is over: what is still pending goes to the trace.
  void finish();

  path_table& paths() { return paths_; }
  // fsrr's own root, as a root of the trace: the top of paths named on its command line.
  path_id own_root_top();
  initial_tree& tree() { return tree_; }
  const decoder_stats& stats() const { return stats_; }
  // How many objects (tasks, inodes, fds, paths, ...) the decoder holds now: what its memory
  // grows with. Bounded by the live state of the workload, not by its history.
  size_t tracked() const;
  uint64_t trace_time(uint64_t monotonic_ns) const {
    return monotonic_ns > base_ ? monotonic_ns - base_ : 0;
  }

 private:
  struct task {
    int32_t pid = 0;
    int32_t ppid = 0;
    std::string comm;
    uint64_t files = 0;    // files_struct *: its fd table
    uint64_t fs = 0;       // fs_struct *: its cwd
    thread_id id = no_id;  // in the trace; added at the task's first event
    fsrr_ids own{};        // its ids as it sees them
    uint32_t root = 0;     // index in roots_ + 1; 0: not announced
  };
  // A root of the trace (trace_root): what its paths hang below, and its mounts.
  struct root_state {
    const root_dir* dir = nullptr;
    uint32_t number = 0;  // in the trace, from 1
    path_id top = no_id;
    mount_table mounts;
  };
  // What a path last held, as far as the trace knows.
  struct held_file {
    file_id id = no_id;
    uint32_t type = 0;  // S_IFMT bits
  };
  // An fd argument as the trace sees it.
  struct fd_ref {
    file_id file = no_id;
    path_id path = no_id;
    bool nonfile = false;
    fd_kind kind = fd_kind::other;
    bool filtered = false;  // --path: outside the kept directories
  };
  struct syscall_ctx;

  void on_syscall(std::span<const uint8_t> record);
  void on_task(std::span<const uint8_t> record);
  void on_fork(std::span<const uint8_t> record);
  void on_exec(std::span<const uint8_t> record);
  void on_exit(std::span<const uint8_t> record);
  void on_cwd(std::span<const uint8_t> record);
  void on_fd(std::span<const uint8_t> record);
  void on_uring(std::span<const uint8_t> record);  // engine_events.cc
  void on_uring_names(std::span<const uint8_t> record);
  // An io_uring request's bytes through a pipe or a Unix socket (engine_events.cc).
  void uring_stream(const fsrr_uring& h, const fsrr_file& f, fd_kind kind, task& t, int32_t tid);
  int32_t fixed_fd(uint64_t files, const fsrr_uring_sub& sub, uint64_t file);
  // The fd of the trace's own for slot `slot` of `ring`'s table of registered files in fd
  // table `files` (a direct descriptor), from now on what requests on the slot name.
  int32_t slot_fd(uint64_t files, uint64_t ring, int32_t slot);
  // An io_uring request on names (open, close, statx, rename, ...), decoded as the syscall
  // that does the same; false if it cannot be (a direct descriptor, names not seen).
  bool decode_uring_name(const fsrr_uring& h, const record_items& it);
  // SPLICE and TEE: a splice event as the syscall's, the file on its side bound; false if the
  // file it read from is not known (a registered one: SPLICE_F_FD_IN_FIXED).
  bool uring_splice(const fsrr_uring& h, const record_items& it);
  void on_mmap_write(std::span<const uint8_t> record);  // engine_events.cc
  // The file a record's FILE (and ATTR, WALK) items describe, as an fd of `files`: the fd
  // `fd` if the table has that file there, else bound there now (an fd_bind event).
  // `pos`: the file's position before the record's request, where a new binding starts.
  struct fd_ref bind_engine_fd(task& t, int32_t tid, uint64_t files, int32_t fd,
                               const fsrr_file& f, const record_items& it, uint64_t ts,
                               int64_t pos, int slot = 0);

  // The per-op mapping (syscall_events.cc).
  void decode(syscall_ctx& c);
  void decode_open(syscall_ctx& c);
  void decode_data(syscall_ctx& c);
  void decode_copy(syscall_ctx& c);
  void decode_fd_table(syscall_ctx& c);
  void decode_name(syscall_ctx& c);
  void decode_bind(syscall_ctx& c);
  void decode_process(syscall_ctx& c);
  void decode_invisible(syscall_ctx& c);
  // Linux AIO (engine_events.cc): io_submit's iocbs wait for the io_getevents that reaps them.
  void decode_aio_submit(syscall_ctx& c);
  void decode_aio_events(syscall_ctx& c);
  void decode_other(syscall_ctx& c);
  void other_args(syscall_ctx& c);
  void xattr_fields(syscall_ctx& c);
  void found_by_other(syscall_ctx& c, bool path_op);
  // Fills fd, file (and the fd's path) from fd slot `slot`; false, with the op counted as
  // a non-file op, if the fd is a pipe, socket, tty or the like.
  bool fd_op(syscall_ctx& c, int slot, int64_t fd);
  path_id path_arg(syscall_ctx& c, int slot);
  bool stat_result(syscall_ctx& c, path_id p, bool follows);
  // On a pseudo file system, a device node or a POSIX shared-memory object: counted, not
  // replayed.
  bool off_storage(path_id p) {
    return p != no_id &&
           (root_at(paths_.top(p)).mounts.pseudo(paths_, p) || not_storage_.count(p));
  }
  // shm_open's object: a regular file directly in the tmpfs at /dev/shm (glibc's place for
  // them). Memory processes share, as memfd and SysV segments are; what lies in a directory
  // beneath /dev/shm is a file like any other.
  bool shm_object(path_id p, const fsrr_file& f) const;
  // The root a record names for its task, added to the trace when first met.
  uint32_t root_for(const fsrr_root& r, int32_t pid);
  root_state& root_at(path_id top);
  path_id top_of(const task& t);  // what its absolute names and walks start from
  path_id walk_path(const task& t, const walk_view& w);
  void emit(syscall_ctx& c);
  bool keeps(syscall_ctx& c);
  bool inside(path_id p);  // beneath a kept directory (answers cached by path id)
  bool names_kept_dir(path_id p);  // a kept directory, or one above it

  // The task a record names, with the tables the record says it uses (0: unknown).
  task& task_of(int32_t tid, int32_t pid, uint64_t files, uint64_t fs = 0);
  task& task_of(int32_t tid);  // a syscall's: as last announced
  thread_id thread_of(task& t, int32_t tid);
  static std::optional<fd_kind> nonfile_kind(const fsrr_file& f);
  file_id file_of(const fsrr_file& f);
  file_id file_of_stat(uint64_t dev, uint64_t ino, uint32_t mode);
  void new_incarnation(inode_state& n, uint64_t dev, uint64_t ino, uint32_t mode, bool reused);
  fd_ref fd_of(uint64_t files, int64_t fd, const fsrr_fdref* ref);
  observed observe(const fsrr_file& f, const fsrr_attr* a, file_id id) const;
  void bind(uint64_t files, int fd, const fsrr_file& f, file_id id, path_id path, bool cloexec);
  void bind_nonfile(uint64_t files, int fd, const fsrr_file& f, fd_kind kind);
  // The streams a pipe, Unix socket or device is written into and read from (no_id: none
  // the trace follows).
  std::pair<file_id, file_id> stream_ends(const fsrr_file& f, fd_kind kind);
  // The stream a Unix socket's struct sock * (`ino`: its inode, 0 if only named as a peer)
  // sends into; a new one if the pointer now belongs to another socket.
  file_id socket_stream(uint64_t sk, uint64_t ino);
  // A read or write family call on a pipe, Unix socket or device: a stream_read or
  // stream_write event if it moved bytes on a stream the trace follows.
  void stream_op(syscall_ctx& c, int64_t fd);
  void seen_at(file_id file, const fsrr_file& f, path_id path);
  held_file held(path_id p) const { return p < at_path_.size() ? at_path_[p] : held_file{}; }
  void hold(path_id p, held_file f) {
    if (p == no_id) return;
    if (p >= at_path_.size()) at_path_.resize(p + p / 2 + 1024);
    at_path_[p] = f;
  }
  void unresolved();
  // An xattr name's id: the same few names come with every file, and the writer's table
  // builds a string key for each lookup.
  string_id name_id(std::string_view name);

  trace_writer& w_;
  uint64_t base_;
  path_table paths_;
  fd_tables fds_;
  initial_tree tree_;
  root_registry& registry_;
  std::vector<root_state> roots_;
  std::vector<std::string> kept_;      // --path directories, as fsrr sees them
  std::vector<path_id> kept_ids_;      // the same, below each root that shows them
  std::vector<uint8_t> inside_;        // by path id: 0 unknown, 1 outside, 2 inside
  std::function<void()> kept_replaced_;
  // Paths a stat or open showed to be device nodes, or opens to be shared-memory objects.
  std::unordered_set<path_id> not_storage_;
  // The record's header, its items parsed into `it`; nullptr, counted malformed, for a record
  // too short, with items that do not parse, or (needs_file) without a file item.
  template <class H>
  const H* parsed(std::span<const uint8_t> record, record_items& it, bool needs_file = false) {
    const auto* h = header_as<H>(record);
    if (h && parse_items(record, sizeof *h, it) && (!needs_file || it.file[0])) return h;
    ++stats_.malformed;
    return nullptr;
  }
  decoder_stats stats_;
  std::unordered_map<int32_t, task> tasks_;
  inode_table inodes_;
  std::vector<held_file> at_path_;                     // by path id
  // (parent tid, child tid as the parent names it) -> the child's fd table: the clone's aux.
  std::map<std::pair<int32_t, int32_t>, uint64_t> child_files_;
  std::unordered_map<int32_t, path_id> exec_path_;     // exec record -> the execve event
  struct socket_end {
    file_id stream = no_id;
    uint64_t ino = 0;
  };
  std::unordered_map<uint64_t, socket_end> sockets_;  // struct sock * -> what it sends into
  uint64_t next_socket_ = 0;
  std::unordered_map<std::string, string_id, string_hash, std::equal_to<>> names_;
  bool uring_ = false;
  bool mapped_writes_ = false;
  // The fd a file mapped shared is written through in the trace, per fd table: from
  // mapped_fd_base on, one per file.
  std::map<std::pair<uint64_t, uint64_t>, int32_t> mapped_fds_;  // (files, struct file *)
  std::unordered_map<uint64_t, int32_t> next_mapped_fd_;           // files -> the next one
  // A ring's registered file, per fd table: the fd it came from, or one of fixed_fd_base on
  // per (ring, index).
  std::map<std::tuple<uint64_t, uint64_t, int32_t>, int32_t> fixed_fds_;  // -> fd it is now
  std::map<std::tuple<uint64_t, uint64_t, int32_t>, int32_t> pseudo_fixed_;  // -> its own fd
  std::unordered_map<uint64_t, int32_t> next_fixed_fd_;
  // Files io_uring requests ran on, by struct file *, as their records first described them.
  struct uring_file {
    file_id file = no_id;
    path_id path = no_id;
    uint64_t ino = 0;
    bool ipc = false;  // mapped memory shared through it, not storage
  };
  std::unordered_map<uint64_t, uring_file> uring_files_;
  // AIO requests submitted and not reaped yet, by (context, iocb address).
  struct aio_request {
    uint64_t ts = 0;  // trace time of the io_submit
    int32_t tid = 0;
    uint64_t files = 0;
    uint16_t opcode = 0;
    int32_t fd = -1;
    uint64_t nbytes = 0;
    int64_t offset = 0;
    uint32_t rw_flags = 0;
    uint64_t ctx = 0;
    std::optional<fd_entry> fd_at_submit;  // what the fd was when submitted
  };
  std::map<std::pair<uint64_t, uint64_t>, aio_request> aio_pending_;
  // io_events whose io_submit was not decoded yet: (result, when reaped), by the same key.
  std::map<std::pair<uint64_t, uint64_t>, std::pair<int64_t, uint64_t>> aio_early_;
  void aio_done(const aio_request& r, int64_t res, uint64_t done);
  // io_uring rings and AIO contexts by their kernel address, numbered from 1 as first met:
  // the replay gives each one of its own (event::via).
  std::unordered_map<uint64_t, uint32_t> queues_;
  uint32_t queue_number(uint64_t queue);
  // Names of io_uring requests submitted and not completed yet, by (ring, submission time).
  struct uring_names {
    std::optional<std::string> name[2];
  };
  std::map<std::pair<uint64_t, uint64_t>, uring_names> uring_names_;
};

}  // namespace fsrr::recorder
