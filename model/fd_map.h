// The recorded processes' fd tables, rebuilt from the event stream in trace order. A recorded
// fd refers to a handle, which stands for one open file description: dup and fork share it,
// and the replay's real fd behind it is closed when the last reference goes. Replay threads
// only ever see handles, so fd numbers, CLOEXEC, fork copies, CLONE_FILES sharing, exec and
// close_range are all settled here, in one thread, before an op is handed out.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "event.h"

namespace fsrr {

using handle_id = uint32_t;  // 0: none
inline constexpr handle_id no_handle = 0;

// What the recording says about one open file description.
struct handle_info {
  uint32_t refs = 0;   // table entries pointing at it
  uint32_t flags = 0;  // open flags
  path_id path = no_id;
  int64_t pos = 0;  // recorded file position after the ops seen so far
  file_id file = no_id;  // the inode it was opened on
  uint64_t listed = 0;   // a directory: bytes its listing returned; ~0 once it returned all
};

// An fd of a table, as open_fds() lists them.
struct open_fd {
  int32_t fd = -1;
  handle_id h = no_handle;
  bool cloexec = false;
};

// The handles an event released: almost always none or one, so they are kept in place (a
// replay thread reads them right after the syscall, often on another CPU than the writer).
class handle_list {
 public:
  const handle_id* begin() const { return more_.empty() ? in_place_.data() : more_.data(); }
  const handle_id* end() const { return begin() + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  handle_id operator[](size_t i) const { return begin()[i]; }
  void clear() {
    size_ = 0;
    more_.clear();
  }
  void push_back(handle_id h) {
    if (more_.empty() && size_ < in_place_.size()) {
      in_place_[size_++] = h;
      return;
    }
    if (more_.empty()) more_.assign(in_place_.begin(), in_place_.begin() + size_);
    more_.push_back(h);
    ++size_;
  }
  bool operator==(const std::vector<handle_id>& v) const {
    return std::equal(begin(), end(), v.begin(), v.end());
  }

 private:
  uint32_t size_ = 0;
  std::array<handle_id, 3> in_place_{};
  std::vector<handle_id> more_;
};

// The fd-table side of one event.
struct fd_effect {
  handle_id h1 = no_handle;  // the handle of ev.fd, or the one an open/fd_bind created
  handle_id h2 = no_handle;  // the handle of ev.fd2
  bool opened = false;       // h1 is new: the replay thread opens it
  // Copy ops: the call passed NULL for the offset (recorded as -1), so it used and moved the
  // fd's position (cp's copy_file_range does).
  bool pos1 = false, pos2 = false;
  handle_list released;  // last references dropped: the replay fds to close
  void clear() {
    h1 = h2 = no_handle;
    opened = pos1 = pos2 = false;
    released.clear();
  }
};

class fd_map {
 public:
  // `threads[t]` describes thread id t (index 0 unused): its tid and first fd table.
  explicit fd_map(std::vector<thread_info> threads);
  ~fd_map();
  fd_map(const fd_map&) = delete;
  fd_map& operator=(const fd_map&) = delete;

  // Applies `e` to the tables; `out` is cleared first.
  void apply(const event& e, fd_effect& out);

  const handle_info& handle(handle_id h) const { return handles_[h]; }
  // The recorded fd table the thread uses now (changes at exec).
  uint32_t table_of(thread_id t) const;
  // A released handle may be handed out again once its replay fd is closed.
  void recycle(handle_id h) { free_.push_back(h); }
  // Handles still referenced (open at the end of the trace).
  std::vector<handle_id> live() const;
  // The fds of the table thread `t` uses now (or will, for a thread cloned that has not run
  // yet), in fd order; and something that tells that table from every other (0: none).
  std::vector<open_fd> open_fds(thread_id t) const;
  uint64_t table_identity(thread_id t) const;
  size_t handle_capacity() const { return handles_.size(); }

 private:
  struct entry {
    handle_id h = no_handle;
    bool cloexec = false;
    // The binding the kernel had already dropped when it gave this fd number out again, as
    // far as the trace's entry-time order can tell: a close in one thread may enter after an
    // open in another that then returns the closed number. Until the open's exit (`since`),
    // events on the fd mean `prev`. Times rounded to the trace's unit (16 ns) keep that
    // order: an op that still used the old binding entered before the kernel gave the number
    // out again, and that is the open's whole return path (its exit probe included) before
    // `since`, hundreds of nanoseconds, so its rounded time stays below `since`.
    handle_id prev = no_handle;
    uint64_t since = 0;
  };
  struct table {
    uint32_t id = 0;
    uint32_t users = 0;  // live threads using it
    std::vector<entry> fds;
  };
  struct thread_state {
    table* t = nullptr;
    bool started = false;
  };

  table* new_table(uint32_t id);
  table* copy_table(const table& from, uint32_t id);
  table* table_for(thread_id t);
  const table* current_table(thread_id t) const;
  handle_id lookup(const table& t, int32_t fd, uint64_t ts) const;
  handle_id new_handle(uint32_t flags, path_id path, int64_t pos, file_id file);
  void install(table& t, int32_t fd, handle_id h, bool cloexec, fd_effect& out);
  // An fd number the kernel allocated (lowest free: open, dup, F_DUPFD) by a call that
  // returned at `exit_ts`: what the table still holds there was closed by then.
  void allocate(table& t, int32_t fd, handle_id h, bool cloexec, uint64_t exit_ts,
                fd_effect& out);
  // close(fd) entered at `ts`.
  void close_at(table& t, int32_t fd, uint64_t ts, fd_effect& out);
  void remove(table& t, int32_t fd, fd_effect& out);
  void unref(handle_id h, fd_effect& out);
  void leave(table* t, fd_effect& out);
  void track_position(const event& e, fd_effect& out);

  std::vector<thread_info> info_;
  std::vector<thread_state> threads_;
  std::vector<std::unique_ptr<table>> tables_;
  std::unordered_map<uint32_t, table*> by_id_;
  // (host, clone result tid) -> the child's table, until it runs: the tids of a merged trace's
  // hosts repeat.
  static uint64_t child_key(const thread_info& t, int32_t tid) {
    return uint64_t{t.host} << 32 | static_cast<uint32_t>(tid);
  }
  std::unordered_map<uint64_t, table*> child_table_;
  std::vector<handle_info> handles_{1};
  std::vector<handle_id> free_;
};

}  // namespace fsrr
