// Writes a recording the way the recorder would, one syscall per line of test code, so tests
// can state workloads (cp -a, rsync, dd oflag=sync, a threaded writer) as traces.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <string>

#include "trace_error.h"
#include "trace_writer.h"

namespace fsrr::test {

class trace_builder {
 public:
  explicit trace_builder(const std::string& path)
      : w_(or_throw(trace_writer::create(path, header(), options()))) {}
  // With a header of the test's own (host name, clock pair, ...).
  trace_builder(const std::string& path, const header_info& h)
      : w_(or_throw(trace_writer::create(path, h, options()))) {}

  // A recorded thread: `fd_table` identifies its fd table (threads sharing one share fds).
  thread_id thread(int32_t tid, int32_t pid, uint32_t fd_table) {
    return w_.add_thread({tid, pid, 1, w_.intern_string("test"), fd_table});
  }
  path_id path(const std::string& p) { return w_.intern_path(p); }
  file_id file(uint64_t ino, uint32_t type = S_IFREG) { return w_.intern_file({1, ino, 0, type}); }
  void tree_symlink(const std::string& p, const std::string& target) {
    tree_entry e;
    e.path = w_.intern_path(p);
    e.mode = S_IFLNK | 0777;
    e.size = target.size();
    e.target = w_.intern_string(target);
    w_.add_tree_entry(e);
  }
  // A symlink the recorder saw go before it could read its target.
  void tree_symlink_unread(const std::string& p) {
    tree_entry e;
    e.path = w_.intern_path(p);
    e.mode = S_IFLNK | 0777;
    w_.add_tree_entry(e);
  }
  string_id str(const std::string& s) { return w_.intern_string(s); }

  void tree_dir(const std::string& p, uint32_t mode = 0755) { tree(p, S_IFDIR | mode, 0); }
  // `f`: the inode the recorder knew it as (ops on it name that file id).
  void tree_file(const std::string& p, uint64_t size, uint32_t mode = 0644, file_id f = no_id) {
    tree(p, S_IFREG | mode, size, f);
  }

  // Stages an event of `t` at time `ts` (ns) lasting `dur`; the caller fills in its fields
  // through the returned reference, and it is appended at the next call.
  event& at(thread_id t, uint64_t ts, op kind, int64_t result = 0, uint64_t dur = 1000) {
    append_staged();
    staged_ = event{};
    staged_.thread = t;
    staged_.ts = ts;
    staged_.dur = dur;
    staged_.kind = kind;
    staged_.result = result;
    has_staged_ = true;
    if (ts > now_) now_ = ts;
    return staged_;
  }
  // The same, 10 µs after the latest event so far.
  event& next(thread_id t, op kind, int64_t result = 0) {
    return at(t, now_ + 10'000, kind, result);
  }

  void finish() {
    append_staged();
    or_throw(w_.finish());
  }
  uint64_t now() const { return now_; }
  trace_writer& writer() { return w_; }

 private:
  static header_info header() {
    header_info h;
    h.writer = "test";
    h.kind = trace_kind::recording;
    return h;
  }
  static writer_options options() {
    writer_options o;
    o.overwrite = true;
    return o;
  }
  void tree(const std::string& p, uint32_t mode, uint64_t size, file_id f = no_id) {
    tree_entry e;
    e.path = w_.intern_path(p);
    e.mode = mode;
    e.size = size;
    e.allocated = size;
    e.file = f;
    w_.add_tree_entry(e);
  }
  void append_staged() {
    if (has_staged_) w_.append(staged_);
    has_staged_ = false;
  }

  trace_writer w_;
  event staged_{};
  bool has_staged_ = false;
  uint64_t now_ = 0;
};

}  // namespace fsrr::test
