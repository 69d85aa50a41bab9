// `fsrr import strace`: the calls that change a process rather than a file — its fd table
// (dup, fcntl, close_range), its directory, its children, its program, its mappings, and the
// storage engines strace cannot see into.
#include <sched.h>
#include <sys/mman.h>

#include <iterator>

#include "strace_import.h"
#include "strace_importer.h"

namespace fsrr::transform::strace {

void importer::dup_fcntl(one_call& x) {
  const op k = x.k;
  event& e = x.e;
  const fd_text f = fd_arg(x.arg(0));
  open_file copy = file_of(x.pid, f);
  static const std::map<std::string_view, uint64_t> cmds = {
      {"F_DUPFD", 0}, {"F_GETFD", 1}, {"F_SETFD", 2},  {"F_GETFL", 3},           {"F_SETFL", 4},
      {"F_GETLK", 5}, {"F_SETLK", 6}, {"F_SETLKW", 7}, {"F_DUPFD_CLOEXEC", 1030}};
  int64_t to = -1;
  if (k == op::dup) to = x.res;
  if (k == op::dup2 || k == op::dup3) e.fd2 = static_cast<int32_t>(x.num(1)), to = x.res;
  if (k == op::dup3) e.flags = x.flags(2, open_flags);
  if (k == op::fcntl) {
    e.aux = bits(x.arg(1), cmds);
    e.flags = x.flags(2, {{"FD_CLOEXEC", 1}});
    if (e.aux == 0 || e.aux == 1030) to = x.res;
  }
  if (to >= 0 && x.res >= 0) fds(x.pid).insert_or_assign(to, copy);
  if (copy.kind != obj::storage) return nonfile(k, copy.kind);
  e.fd = static_cast<int32_t>(f.fd);
  e.file = copy.file;
  x.emit();
}

void importer::close_range_call(one_call& x) {
  event& e = x.e;
  e.fd = static_cast<int32_t>(x.num(0));
  e.fd2 = static_cast<int32_t>(x.num(1));
  auto& table = fds(x.pid);
  if (x.res == 0)
    for (auto it = table.lower_bound(e.fd);
         it != table.end() && it->first <= static_cast<uint32_t>(e.fd2);)
      it = table.erase(it);
  x.emit();
}

void importer::chdir_call(one_call& x) {
  const std::string path = x.at(SIZE_MAX, 0);
  if (!x.on_path(path, true)) return;
  if (x.res == 0) thread(x.pid).cwd = path, dirs_.insert(path);
  x.emit();
}

void importer::clone_call(one_call& x) {
  const int64_t res = x.res;
  uint64_t flags = x.k == op::vfork ? CLONE_VM | CLONE_VFORK : 0;
  for (const auto& a : x.c.args)
    if (const size_t f = a.find("flags="); f != std::string::npos)
      flags =
          bits(std::string_view(a).substr(f + 6, a.find_first_of(",}", f) - f - 6), clone_flags);
  x.e.flags = static_cast<uint32_t>(flags);
  if (res > 0) {
    thread_state parent = thread(x.pid);
    thread_state& child = threads_[static_cast<int32_t>(res)];
    child.tgid = flags & CLONE_THREAD ? parent.tgid : static_cast<int32_t>(res);
    child.ppid = flags & CLONE_THREAD ? parent.ppid : parent.tgid;
    child.comm = parent.comm;
    child.cwd = parent.cwd;
    if (flags & CLONE_FILES) {
      child.table = parent.table;
    } else {
      child.table = ++tables_;
      tables_fds_[child.table] = tables_fds_[parent.table];
    }
    x.e.aux = child.table;
  }
  x.emit();
}

void importer::exec_call(one_call& x) {
  const bool at = x.k == op::execveat;
  const std::string path = x.at(at ? 0 : SIZE_MAX, at ? 1 : 0);
  x.e.path = w_.intern_path(path);
  if (x.res == 0) {
    thread_state& t = thread(x.pid);
    t.comm = path.substr(path.rfind('/') + 1).substr(0, 15);
    auto& table = fds(x.pid);
    for (auto it = table.begin(); it != table.end();)
      it = it->second.cloexec ? table.erase(it) : std::next(it);
    x.e.aux = t.table;
    if (command.empty()) {  // the program the log starts with
      const std::string argv = x.arg(at ? 2 : 1);
      const std::string_view inside =
          std::string_view(argv).substr(1, argv.size() > 1 ? argv.size() - 2 : 0);
      for (const auto& a : split_args(inside)) command.push_back(unquote(a));
    }
    saw(path, true);
  }
  x.emit();
}

void importer::mmap_call(one_call& x) {
  event& e = x.e;
  if (x.num(4) < 0) return nonfile(x.k, obj::other);  // anonymous
  if (!x.on_fd(4)) return x.not_file(4);
  e.size = static_cast<uint64_t>(x.num(1));
  e.mode = x.flags(2, prot_flags);
  e.flags = x.flags(3, map_flags);
  e.offset = x.num(5);
  if ((e.flags & MAP_SHARED) && (e.mode & PROT_WRITE)) w_.mark_incomplete(incomplete_shared_mmap);
  x.emit();
}

// io_uring's and Linux AIO's requests are not in an strace log: the trace says so.
void importer::engine_call(one_call& x) {
  const bool uring = x.k == op::io_uring_setup || x.k == op::io_uring_enter;
  w_.mark_incomplete(uring ? incomplete_io_uring : incomplete_aio);
  x.emit();
}

}  // namespace fsrr::transform::strace
