// How one recorded op is re-issued on the target: the unit of work a replay thread receives
// (the event plus everything the dispatcher settled for it) and the runner that issues it,
// compares the result with the recorded one and counts it. One switch keyed by op, in
// op_dispatch.cc; the path-based families live in op_paths.cc.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "data_flow.h"
#include "data_source.h"
#include "engine_requests.h"
#include "environment.h"
#include "event.h"
#include "fd_map.h"
#include "ordering.h"
#include "privilege.h"
#include "report.h"
#include "schedule.h"
#include "target.h"
#include "trace_reader.h"
#include "work_item.h"

namespace fsrr {

// A trace path as the replay threads use it, resolved once by the dispatcher.
struct resolved_path {
  bool ok = false;           // beneath TARGET/maps; else every op on it is refused (-EXDEV)
  uint32_t gen = 0;          // the path_cache generation it belongs to
  target_root::location at;  // the object itself
  size_t name_at = 0;        // where the last component starts in at.rel
  path_id id = no_id;
  path_id parent = no_id;    // key of the parent directory in the per-thread directory cache
  const resolved_path* up = nullptr;               // the parent's entry; none for "/"
  std::string_view last;                           // the last component, as the trace has it
  bool is_root() const { return at.rel.empty(); }  // TARGET or a --map destination itself
  const char* name() const { return at.rel.c_str() + name_at; }
  target_root::location dir() const {
    return {at.root, at.rel.substr(0, name_at ? name_at - 1 : 0)};
  }
  std::string trace_path() const;  // "/a/b", for reports
};

// Resolves trace paths for the dispatcher, in generations so that its memory does not grow
// with the trace's paths: an entry, and the entries of its ancestors its `up` chain reaches,
// stay put until its generation is freed. Once the current generation is full, the dispatcher
// retires it between two ops, with the point each queue of ops must reach before nothing
// queued refers to it any more; a path asked for again after that is resolved anew.
class path_cache {
 public:
  path_cache(trace_reader& reader, const target_root& target, size_t generation);
  ~path_cache();
  const resolved_path* get(path_id id);  // nullptr for no_id or an unknown id
  // The current generation holds its share of entries: time to retire().
  bool full() const { return current_->entries.size() >= generation_; }
  // Starts a new generation; the old one is freed once every dependency is reached (an empty
  // list: at once, as nothing queued refers to it).
  void retire(std::vector<dependency> until);
  void collect();               // frees the retired generations whose dependencies are reached
  void drop_retired();          // frees every retired generation: no op is queued any more
  size_t live_entries() const;  // in all generations not yet freed

 private:
  struct generation {
    uint32_t number = 0;
    std::deque<resolved_path> entries;
    std::vector<dependency> until;
  };
  bool current(const resolved_path* p) const { return p && p->gen == current_->number; }
  const resolved_path* resolve(path_id id);  // its ancestors current already
  void free(generation& g);
  trace_reader& reader_;
  const target_root& target_;
  size_t generation_;
  std::vector<const resolved_path*> index_;  // by path id: its newest entry, if not freed
  std::deque<std::unique_ptr<generation>> retired_;
  std::unique_ptr<generation> current_;
  // The trace paths of the last few parents (a copy alternates between two directories).
  struct parent_path {
    path_id id = no_id;
    std::string path;
  };
  std::array<parent_path, 4> parents_;
  size_t next_parent_ = 0;
  std::string scratch_;
};


// The replay fd behind each handle. Chunks never move; the dispatcher makes them before it
// hands out a handle, a replay thread fills a slot when it opens the handle.
struct handle_slot {
  int fd = -1;
  uint32_t flags = 0;
  uint64_t key = 0;      // data key of the file's bytes
  path_id path = no_id;  // what it was opened by, for reports
  // A directory's listing so far (getdents results since the open or the last lseek), as
  // recorded and as replayed: a file system may split the same entries otherwise.
  uint64_t listed_recorded = 0;
  uint64_t listed_replayed = 0;
};

class handle_table {
 public:
  handle_table();
  ~handle_table();
  void ensure(size_t count);  // dispatcher only
  handle_slot& operator[](handle_id h) const {
    return chunks_[h >> chunk_bits].load(std::memory_order_relaxed)[h & (chunk_size - 1)];
  }
  void close_all();  // after the replay threads have ended

 private:
  static constexpr unsigned chunk_bits = 12;
  static constexpr size_t chunk_size = size_t{1} << chunk_bits;
  static constexpr size_t max_chunks = size_t{1} << 16;
  std::unique_ptr<std::atomic<handle_slot*>[]> chunks_;
  size_t made_ = 0;
};

// What all replay threads share.
struct replay_shared {
  const target_root& target;
  const data_source& data;
  bool zero_data = false;  // the data source yields only zeros: buffers need no filling
  bool strict = false;
  bool issue_all = false;  // issue calls whose recorded failure came from the environment
  bool same_engines = true;    // engine requests through their engine (engine_requests.h)
  bool mmap_as_write = false;  // mapped stores as pwrite
  bool timed = false;          // a timed mode: requests keep the recorded depth (engine_requests.h)
  privilege_options privilege;
  size_t listed_mismatches = 10;
  const std::function<void(uint64_t)>* after_point = nullptr;  // engine_options'
  const std::function<bool(uint64_t, bool)>* crash_point = nullptr;  // engine_options'
  handle_table handles;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> namespace_gen{0};  // bumped when a directory may have moved or gone
  std::atomic<uint32_t> remote_waiters{0};  // replay threads waiting for another process's op
  uint64_t start_tick = 0;                 // latency_clock at the replay's start: the timeline's 0
  std::span<uint8_t> sink;                 // where reads land; contents never looked at
  trace_reader* trace = nullptr;           // names for reports (its tables are read-only)

  replay_shared(const target_root& t, const data_source& d);
  ~replay_shared();
  void request_stop(const std::string& why);
  std::string stop_reason() const;

 private:
  mutable std::mutex mu_;
  std::string reason_;
};

inline constexpr int64_t not_issued = INT64_MIN;

class op_runner {
 public:
  // `host`: the thread's host in a trace of several, as mismatch lines name it ("" else).
  op_runner(replay_shared& shared, replay_stats& stats, int32_t tid, std::string host = "");
  ~op_runner();
  op_runner(const op_runner&) = delete;
  op_runner& operator=(const op_runner&) = delete;

  // Issues the op, compares and counts it; may request a stop (strict, ENOSPC, EIO). Returns
  // how long the syscall took (ns).
  uint64_t run(const work_item& w);
  // The calling thread has a working directory of its own (unshare(CLONE_FS)): path xattr
  // calls then name the object from its confined parent directory, which they enter.
  void own_working_directory() { own_cwd_ = true; }
  // Closes the replay fds of the handles whose last reference the op dropped.
  void release(const work_item& w);

  // Engine requests (engine_requests.h) in flight. A lane's ops count as finished, for the
  // ops of other lanes waiting for them, once every earlier one has completed: the runner
  // advances `done` itself (op_finished()) when given one.
  void acknowledge_to(progress_counter* done) { done_ = done; }
  void op_finished() {
    ++ops_finished_;
    acknowledge();
  }
  bool idle() const { return !requests_ || requests_->idle(); }
  void flush_requests() {
    if (requests_) requests_->flush();
  }
  void settle_all();  // reaps every request in flight

 private:
  int64_t issue(const work_item& w);
  // Engine requests: what the recorded order needs reaped before w, then w's own submission
  // (false: issue it as a syscall).
  void before_op(const work_item& w);
  bool submit_request(const work_item& w);
  void request_done(const work_item& w, int64_t result, uint64_t start_tick);
  void acknowledge();
  int64_t mapped_store(const work_item& w, int fd, std::span<const uint8_t> bytes);
  // environment.h: the recorded effect of a call the target refused for its own reasons,
  // produced another way; `refused` (-errno) if there is none (op_environment.cc).
  int64_t produce_effect(const work_item& w, int64_t refused, env_cause cause);
  int64_t copy_by_hand(const work_item& w);
  int64_t clone_by_hand(const work_item& w);
  int64_t fallocate_by_hand(const work_item& w);
  int64_t move_by_hand(const work_item& w, int64_t refused);
  // fd-based families (op_dispatch.cc)
  int64_t open_file(const work_item& w);
  int64_t bind_fd(const work_item& w);
  int64_t close_fd(const work_item& w);
  int64_t read_data(const work_item& w);
  int64_t write_data(const work_item& w);
  int64_t copy_data(const work_item& w);
  int64_t ioctl_op(const work_item& w);
  int64_t fcntl_op(const work_item& w);
  int64_t flock_op(const work_item& w);
  int64_t fd_meta(const work_item& w);
  // path-based families (op_paths.cc)
  int64_t name_op(const work_item& w);
  int64_t meta_op(const work_item& w);
  int64_t attr_op(const work_item& w);
  // The mode a create or chmod gives: set-id bits only when kept (privilege.h).
  uint32_t mode_of(const event& e) const { return replay_mode(e.mode, s_.privilege); }
  // A call the privilege options leave out: a privileged xattr's set, get or remove.
  bool withheld(const work_item& w) const;
  int64_t xattr_op(const work_item& w);
  int64_t file_attr_op(const work_item& w);
  int64_t truncate_path(const work_item& w);

  int fd_of(handle_id h) const;
  int dir_fd(const resolved_path* p);                // cached, do not close; -errno
  int enter_dir(const resolved_path* p);             // fchdir to p's parent; 0 or -errno
  int open_path(const resolved_path* p, int flags);  // caller closes; -errno
  std::span<uint8_t> buffer(uint64_t size);  // the write buffer, at least `size` bytes or empty
  std::span<uint8_t> fill(uint64_t key, uint64_t offset, uint64_t size);
  // A write's bytes: its sources, then the handle's own (key, offset) for any the sources do
  // not cover.
  std::span<uint8_t> fill(const source_list& sources, uint64_t key, uint64_t offset,
                          uint64_t size);
  void count(const work_item& w, int64_t replayed, uint64_t latency_ns);
  // An op issued at `start_tick` that moved these bytes, in its slice of the timeline.
  void note_time(uint64_t start_tick, uint64_t read, uint64_t written);

  replay_shared& s_;
  replay_stats& stats_;
  int32_t tid_;
  std::string host_;
  const latency_clock& ticks_ = latency_clock::get();
  struct cached_dir {
    path_id id = no_id;
    uint64_t gen = 0;
    int fd = -1;
  };
  static constexpr size_t dir_cache_size = 16;
  cached_dir dirs_[dir_cache_size];
  bool own_cwd_ = false;
  // A getdents that returned other bytes than recorded: a difference while the listing may
  // still add up, a mismatch if its total at the recorded end is not the recorded one.
  void check_listing(const work_item& w, int64_t replayed);
  bool listing_differs_ = false;
  bool difference_ = false;  // the op being counted is one of environment.h's
  env_cause cause_ = env_cause::count;
  path_id cwd_ = no_id;  // the directory entered, at namespace generation cwd_gen_
  uint64_t cwd_gen_ = 0;
  uint8_t* wbuf_ = nullptr;
  size_t wbuf_size_ = 0;
  std::unique_ptr<engine_requests> requests_;  // made at the first request
  // Mapped stores (op_engine_calls.cc): windows of files mapped shared, by device and inode,
  // kept while the thread does nothing else.
  struct map_window {
    dev_t dev = 0;
    ino_t ino = 0;
    uint64_t start = 0, len = 0;  // the file's bytes mapped
    uint64_t size = 0;            // the file's size when mapped
    uint8_t* at = nullptr;
  };
  static constexpr size_t map_windows = 8;
  static constexpr uint64_t window_bytes = uint64_t{256} << 20;  // address space only
  std::vector<map_window> windows_;
  map_window* window_for(int fd, uint64_t offset, uint64_t size);
  void drop_windows();
  progress_counter* done_ = nullptr;
  uint64_t ops_finished_ = 0, acked_ = 0;
  // The last xattr value generated: a copy sets the same ACL on every file.
  struct {
    bool valid = false;
    const std::string* name = nullptr;
    uint32_t size = 0;
    uint64_t key = 0;
    uint32_t mode = 0;
    std::vector<uint8_t> value;
  } xattr_;
};

// Syscall results the replay compares by value (byte counts, offsets); for the others only
// success and errno are compared (fd numbers and tids differ by nature).
bool is_count_result(op kind);
inline bool result_matches(op kind, int64_t recorded, int64_t replayed) {
  if (recorded < 0 || replayed < 0) return recorded == replayed;
  return recorded == replayed || !is_count_result(kind);
}

}  // namespace fsrr
