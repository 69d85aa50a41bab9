// The importer behind `fsrr import strace` (strace_import.h): the state a log's calls build
// (threads, fd tables, what each path was found as) in strace_import.cc, the calls themselves,
// a handler per family of syscalls, in strace_calls.cc. Private to transform/.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event.h"
#include "ops.h"
#include "strace_text.h"
#include "trace_writer.h"

namespace fsrr::transform {
struct strace_import_result;  // strace_import.h
}  // namespace fsrr::transform

namespace fsrr::transform::strace {

enum class obj : uint8_t { storage, pipe, socket, tty, other };

inline fd_kind kind_of(obj o) {
  switch (o) {
    case obj::pipe:
      return fd_kind::pipe;
    case obj::socket:
      return fd_kind::socket;
    case obj::tty:
      return fd_kind::tty;
    default:
      return fd_kind::other;
  }
}

struct open_file {
  obj kind = obj::other;
  std::string path;
  file_id file = no_id;
  file_id stream_out = no_id, stream_in = no_id;
  int64_t pos = 0;
  bool append = false;
  bool cloexec = false;
};

struct thread_state {
  thread_id id = no_id;
  int32_t tgid = 0, ppid = 0;
  uint32_t table = 0;
  std::string comm;
  std::string cwd;
};

// What the log shows of a path the program found: the initial tree's entry for it.
struct found {
  std::map<std::string, uint32_t> xattrs;  // names a listxattr showed, sizes a getxattr did
  bool existed = false;
  uint32_t mode = 0;  // type and bits, where a stat showed them
  uint64_t size = 0;
  bool size_known = false;
  std::string target;  // a symlink's, from readlink
};

class importer {
 public:
  importer(trace_writer& w, strace_import_result& r) : w_(w), r_(r) {}

  void line(std::string_view l);

  void finish();

  std::vector<std::string> command;
  uint64_t first_ts() const { return first_ts_; }

 private:
  // ---- what the processes have ----
  thread_state& thread(int32_t pid);
  thread_id id_of(int32_t pid);
  std::map<int64_t, open_file>& fds(int32_t pid) { return tables_fds_[thread(pid).table]; }

  void put(int32_t pid, uint64_t ts, uint64_t dur, event& e);
  void nonfile(op k, obj o);

  // A path as an absolute one: a name relative to a dirfd's annotation or the cwd.
  std::string absolute(int32_t pid, const fd_text& dir, const std::string& name);

  file_id file_at(const std::string& path, uint32_t type = S_IFREG);

  // The first the log says of a path: that it was there already, or not.
  void saw(const std::string& path, bool existed);
  void stat_of(const std::string& path, std::string_view st);
  void extent_of(const std::string& path, uint64_t end);

  open_file classify(const std::string& what);

  // The file an fd argument names: the table's entry, or what its annotation says.
  open_file& file_of(int32_t pid, const fd_text& f);

  std::string arg(const call& c, size_t i) const {
    return i < c.args.size() ? c.args[i] : std::string();
  }

  void parse(int32_t pid, uint64_t ts, std::string_view text);

  // "3</a/b>", "-1 ENOENT (...)", "0x7f00": the result as the recorder has it.
  int64_t result_of(const call& c) const;
  std::string result_annotation(const call& c) const;

  void handle(op k, const call& c);
  struct one_call;
  using family_handler = void (importer::*)(one_call&);
  static const std::array<family_handler, op_count>& families();
  void open_call(one_call& x);
  void close_call(one_call& x);
  void read_write(one_call& x);
  void seek(one_call& x);
  void copy_range(one_call& x);
  void ioctl_call(one_call& x);
  void advise(one_call& x);
  void list_dir(one_call& x);
  void fd_range(one_call& x);
  void truncate_path(one_call& x);
  void make_node(one_call& x);
  void remove_name(one_call& x);
  void rename_link(one_call& x);
  void make_symlink(one_call& x);
  void link_target(const std::string& path, const std::string& target);
  void path_query(one_call& x);
  void at_call(one_call& x);
  static void at_call_fields(one_call& x);
  static void utimensat_times(const std::string& times, event& e);
  void fd_call(one_call& x);
  void path_owner_mode(one_call& x);
  void xattr_call(one_call& x);
  void dup_fcntl(one_call& x);
  void close_range_call(one_call& x);
  void chdir_call(one_call& x);
  void clone_call(one_call& x);
  void exec_call(one_call& x);
  void mmap_call(one_call& x);
  void engine_call(one_call& x);

  trace_writer& w_;
  strace_import_result& r_;
  int32_t main_pid_ = 0;
  uint64_t first_ts_ = 0, last_ts_ = 0;
  std::unordered_map<int32_t, std::pair<std::string, uint64_t>> unfinished_;
  std::unordered_map<int32_t, thread_state> threads_;
  std::unordered_map<uint32_t, std::map<int64_t, open_file>> tables_fds_;
  uint32_t tables_ = 0;
  std::map<std::string, found> found_;
  std::set<std::string> dirs_;
  std::unordered_map<std::string, file_id> file_at_;
  uint64_t inodes_ = 0;
  std::unordered_map<std::string, uint64_t> sizes_;  // the sizes writes gave files
};

// One call being turned into its event: the call, its result, and the steps every family of
// calls shares.
struct importer::one_call {
  importer& im;
  const call& c;
  op k;
  int32_t pid;
  int64_t res;     // as the recorder has it
  uint64_t moved;  // bytes, for a call that moves some
  event e;

  std::string arg(size_t i) const { return im.arg(c, i); }
  int64_t num(size_t i) const { return number(arg(i)); }
  uint32_t flags(size_t i, const std::map<std::string_view, uint64_t>& names) const {
    return static_cast<uint32_t>(bits(arg(i), names));
  }
  void emit() { im.put(pid, c.ts, c.dur, e); }
  // A (dirfd,) name argument pair as an absolute path; dir SIZE_MAX: none (the cwd).
  std::string at(size_t dir, size_t name) {
    fd_text d;
    if (dir == SIZE_MAX)
      d.at_fdcwd = true, d.fd = AT_FDCWD;
    else
      d = fd_arg(arg(dir));
    return im.absolute(pid, d, unquote(arg(name)));
  }
  // The event names `path`, or (a pseudo file system's) the call is counted as a non-file op.
  bool on_path(const std::string& path, bool existed_if_ok) {
    if (pseudo(path)) {
      im.nonfile(k, obj::other);
      return false;
    }
    e.path = im.w_.intern_path(path);
    if (res >= 0 || res == -EEXIST)
      im.saw(path, existed_if_ok || res == -EEXIST);
    else if (res == -ENOENT)
      im.saw(path, false);
    if (const auto it = im.file_at_.find(path); it != im.file_at_.end()) e.file = it->second;
    return true;
  }
  // An fd argument: the event names its file, or nullptr (the call is not on storage).
  open_file* on_fd(size_t i, bool second = false) {
    const fd_text f = fd_arg(arg(i));
    open_file& o = im.file_of(pid, f);
    if (o.kind != obj::storage) return nullptr;
    (second ? e.fd2 : e.fd) = static_cast<int32_t>(f.fd);
    (second ? e.file2 : e.file) = o.file;
    return &o;
  }
  // The call counted as a non-file op of the kind of its fd argument `i`.
  void not_file(size_t i) { im.nonfile(k, im.file_of(pid, fd_arg(arg(i))).kind); }
  // An argument pair "uid, gid" as the recorder packs it.
  uint64_t owner(size_t i) const {
    return static_cast<uint64_t>(static_cast<uint32_t>(num(i))) << 32 |
           static_cast<uint32_t>(num(i + 1));
  }
};

}  // namespace fsrr::transform::strace
