#include "closure.h"

#include <fcntl.h>
#include <linux/fs.h>

#include <unordered_set>

#include "fd_map.h"

namespace fsrr::transform {
namespace {

// Whether `e` (successful) makes or changes what its files and paths name.
bool changes(const event& e) {
  switch (info(e.kind).cls) {
    case op_class::open:
      return e.kind == op::creat || (e.flags & (O_CREAT | O_TRUNC)) ||
             (e.flags & O_ACCMODE) != O_RDONLY;
    case op_class::write:
    case op_class::resize:
    case op_class::name:
    case op_class::attr:
    case op_class::copy:
      return true;
    case op_class::xattr:
      return e.kind == op::setxattr || e.kind == op::lsetxattr || e.kind == op::fsetxattr ||
             e.kind == op::removexattr || e.kind == op::lremovexattr ||
             e.kind == op::fremovexattr || e.kind == op::setxattrat ||
             e.kind == op::removexattrat;
    case op_class::ioctl:
      return e.aux == FICLONE || e.aux == FICLONERANGE;
    default:
      return false;
  }
}

// Whether `e` (successful) makes, moves or removes a name.
bool changes_names(const event& e) {
  switch (info(e.kind).cls) {
    case op_class::open:
      return e.kind == op::creat || (e.flags & O_CREAT);
    case op_class::name:
      return true;
    default:
      return false;
  }
}

bool process_op(op k) { return info(k).cls == op_class::process; }

class needs {
 public:
  explicit needs(trace_reader& t) : t_(t) {}
  void path(path_id p) {  // and every directory on the way to it
    while (p != no_id) {
      if (p >= paths_.size()) paths_.resize(p + p / 2 + 64, 0);
      if (paths_[p]) return;
      paths_[p] = 1;
      p = t_.path(p).parent;
    }
  }
  void file(file_id f) {
    if (f != no_id) files_.insert(f);
  }
  bool has_path(path_id p) const { return p != no_id && p < paths_.size() && paths_[p]; }
  bool has_file(file_id f) const { return f != no_id && files_.count(f); }

 private:
  trace_reader& t_;
  std::vector<uint8_t> paths_;
  std::unordered_set<file_id> files_;
};

}  // namespace

std::vector<bool> closure(trace_reader& trace, const std::vector<event>& events,
                          const std::vector<thread_info>& threads,
                          const std::vector<bool>& chosen, bool names_only) {
  const size_t n = events.size();
  // The fd side of each event: the handles it uses, the one it opens, the paths they name.
  struct fd_side {
    handle_id h1 = no_handle, h2 = no_handle;
    bool opened = false;
    path_id p1 = no_id, p2 = no_id;  // the handles' paths
  };
  std::vector<fd_side> side(n);
  {
    fd_map fds(threads);
    fd_effect fx;
    for (size_t i = 0; i < n; ++i) {
      fds.apply(events[i], fx);
      side[i] = {fx.h1, fx.h2, fx.opened, fx.h1 ? fds.handle(fx.h1).path : no_id,
                 fx.h2 ? fds.handle(fx.h2).path : no_id};
    }
  }
  std::vector<bool> keep(chosen);
  keep.resize(n, false);
  needs need(trace);
  std::unordered_set<handle_id> handles;
  std::unordered_set<thread_id> threads_kept;
  std::unordered_set<uint64_t> tids_kept;  // (host, tid): a merged trace's hosts reuse tids
  const auto tid_key = [](uint16_t host, int32_t tid) {
    return uint64_t{host} << 32 | static_cast<uint32_t>(tid);
  };
  const auto tid_of = [&](thread_id t) {
    return t < threads.size() ? tid_key(threads[t].host, threads[t].tid) : 0;
  };
  const auto touches = [&](size_t i) {
    const event& e = events[i];
    return need.has_file(e.file) || need.has_file(e.file2) || need.has_path(e.path) ||
           need.has_path(e.path2) || need.has_path(side[i].p1) || need.has_path(side[i].p2);
  };
  for (size_t i = n; i-- > 0;) {
    const event& e = events[i];
    if (process_op(e.kind)) {  // settled below, once the kept threads are known
      if (keep[i]) threads_kept.insert(e.thread), tids_kept.insert(tid_of(e.thread));
      continue;
    }
    if (!keep[i])
      keep[i] = (side[i].opened && handles.count(side[i].h1)) ||
                (e.result >= 0 && (names_only ? changes_names(e) : changes(e)) && touches(i));
    if (!keep[i]) continue;
    threads_kept.insert(e.thread);
    tids_kept.insert(tid_of(e.thread));
    if (has(e.kind, F_FILE)) need.file(e.file);
    if (has(e.kind, F_FILE2)) need.file(e.file2);
    if (has(e.kind, F_PATH)) need.path(e.path);
    if (has(e.kind, F_PATH2)) need.path(e.path2);
    need.path(side[i].p1);
    need.path(side[i].p2);
    if (side[i].h1) handles.insert(side[i].h1);
    if (side[i].h2) handles.insert(side[i].h2);
  }
  // The process tree of the kept threads: their clones (in the parents), execs and exits.
  for (size_t i = 0; i < n; ++i) {
    const event& e = events[i];
    if (keep[i] || !process_op(e.kind)) continue;
    const bool clone = e.kind == op::clone || e.kind == op::clone3 || e.kind == op::fork ||
                       e.kind == op::vfork;
    // a kept thread's exec and exit; a clone only of a child that is kept
    const uint16_t host = e.thread < threads.size() ? threads[e.thread].host : 0;
    keep[i] = clone ? e.result > 0 && tids_kept.count(tid_key(host, static_cast<int32_t>(e.result)))
                    : threads_kept.count(e.thread) > 0;
  }
  // What else an fd a kept event uses goes through: dup, close, fcntl of it.
  // (With names_only, an fcntl that leaves the fd table as it was, F_GETFL or F_SETFL, is not
  // needed to replay: the predicate judges whether it matters.)
  const auto shapes_table = [&](const event& e) {
    return e.kind != op::fcntl || !names_only || e.aux == F_DUPFD || e.aux == F_DUPFD_CLOEXEC ||
           e.aux == F_SETFD;
  };
  for (size_t i = 0; i < n; ++i)
    if (!keep[i] && info(events[i].kind).cls == op_class::fd_table && side[i].h1 &&
        handles.count(side[i].h1) && shapes_table(events[i]))
      keep[i] = true;
  for (size_t i = 0; i < n; ++i)
    if (!keep[i] && events[i].kind == op::close && side[i].h1 && handles.count(side[i].h1))
      keep[i] = true;
  return keep;
}

}  // namespace fsrr::transform
