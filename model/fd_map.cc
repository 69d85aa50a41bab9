#include "fd_map.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>

#include <cerrno>

namespace fsrr {

fd_map::fd_map(std::vector<thread_info> threads)
    : info_(std::move(threads)), threads_(info_.size()) {}

fd_map::~fd_map() = default;

fd_map::table* fd_map::new_table(uint32_t id) {
  tables_.push_back(std::make_unique<table>());
  table* t = tables_.back().get();
  t->id = id;
  t->users = 1;
  if (id != 0) by_id_[id] = t;
  return t;
}

fd_map::table* fd_map::copy_table(const table& from, uint32_t id) {
  table* t = new_table(id);
  t->fds = from.fds;
  for (const entry& e : t->fds) {
    if (e.h != no_handle) ++handles_[e.h].refs;
    if (e.prev != no_handle) ++handles_[e.prev].refs;
  }
  return t;
}

fd_map::table* fd_map::table_for(thread_id tid) {
  if (tid >= threads_.size()) {
    threads_.resize(tid + 1);
    info_.resize(tid + 1);
  }
  thread_state& ts = threads_[tid];
  if (ts.t) return ts.t;
  if (ts.started) return ts.t = new_table(0);  // events after the thread's exit
  ts.started = true;
  const auto child = child_table_.find(child_key(info_[tid], info_[tid].tid));
  if (child != child_table_.end()) {
    ts.t = child->second;  // counted as a user at the clone
    child_table_.erase(child);
    return ts.t;
  }
  const auto known = info_[tid].fd_table ? by_id_.find(info_[tid].fd_table) : by_id_.end();
  if (known != by_id_.end()) {
    ts.t = known->second;
    ++ts.t->users;
    return ts.t;
  }
  return ts.t = new_table(info_[tid].fd_table);
}

uint32_t fd_map::table_of(thread_id t) const {
  return t < threads_.size() && threads_[t].t ? threads_[t].t->id : 0;
}

handle_id fd_map::lookup(const table& t, int32_t fd, uint64_t ts) const {
  if (fd < 0 || static_cast<size_t>(fd) >= t.fds.size()) return no_handle;
  const entry& e = t.fds[fd];
  return e.prev != no_handle && ts < e.since ? e.prev : e.h;
}

handle_id fd_map::new_handle(uint32_t flags, path_id path, int64_t pos, file_id file) {
  handle_id h;
  if (!free_.empty()) {
    h = free_.back();
    free_.pop_back();
  } else {
    h = static_cast<handle_id>(handles_.size());
    handles_.emplace_back();
  }
  handles_[h] = {0, flags, path, pos, file};
  return h;
}

void fd_map::install(table& t, int32_t fd, handle_id h, bool cloexec, fd_effect& out) {
  if (fd < 0 || fd > (1 << 24)) return;  // no real process has that many fds
  if (static_cast<size_t>(fd) >= t.fds.size()) t.fds.resize(fd + 1);
  if (t.fds[fd].h == h) {
    t.fds[fd].cloexec = cloexec;
    return;
  }
  remove(t, fd, out);
  ++handles_[h].refs;
  t.fds[fd] = {h, cloexec};
}

void fd_map::allocate(table& t, int32_t fd, handle_id h, bool cloexec, uint64_t exit_ts,
                      fd_effect& out) {
  if (fd < 0 || fd > (1 << 24)) return;
  if (static_cast<size_t>(fd) >= t.fds.size()) t.fds.resize(fd + 1);
  entry& e = t.fds[fd];
  if (e.prev != no_handle) unref(e.prev, out);  // a close older than an open: lost, say
  const handle_id old = e.h;
  e = {h, cloexec, old, exit_ts};
  ++handles_[h].refs;
}

void fd_map::close_at(table& t, int32_t fd, uint64_t ts, fd_effect& out) {
  if (fd < 0 || static_cast<size_t>(fd) >= t.fds.size()) return;
  entry& e = t.fds[fd];
  if (e.prev != no_handle && ts < e.since) {
    unref(e.prev, out);
    e.prev = no_handle;
    return;
  }
  remove(t, fd, out);
}

void fd_map::remove(table& t, int32_t fd, fd_effect& out) {
  if (fd < 0 || static_cast<size_t>(fd) >= t.fds.size()) return;
  entry& e = t.fds[fd];
  if (e.prev != no_handle) unref(e.prev, out);
  const handle_id h = e.h;
  e = {};
  if (h != no_handle) unref(h, out);
}

void fd_map::unref(handle_id h, fd_effect& out) {
  if (handles_[h].refs > 0 && --handles_[h].refs == 0) out.released.push_back(h);
}

void fd_map::leave(table* t, fd_effect& out) {
  if (!t || t->users == 0 || --t->users > 0) return;
  for (size_t fd = 0; fd < t->fds.size(); ++fd) remove(*t, static_cast<int32_t>(fd), out);
  t->fds.clear();
}

namespace {

// A position moved by a trace's result (> 0), saturating: a hostile trace's sum may not fit.
void advance(int64_t& pos, int64_t n) {
  pos = pos > INT64_MAX - n ? INT64_MAX : pos + n;
}

}  // namespace

void fd_map::track_position(const event& e, fd_effect& out) {
  switch (e.kind) {
    case op::read:
    case op::readv:
    case op::write:
    case op::writev:
      if (out.h1 && e.result >= 0)  // a trace's offset and result: their sum may not fit
        handles_[out.h1].pos = e.offset > INT64_MAX - e.result ? INT64_MAX : e.offset + e.result;
      break;
    case op::lseek:
      if (out.h1 && e.result >= 0) handles_[out.h1].pos = e.result, handles_[out.h1].listed = 0;
      break;
    case op::getdents:
    case op::getdents64:
      if (out.h1 && e.result >= 0) {
        uint64_t& l = handles_[out.h1].listed;
        l = e.result == 0 ? ~uint64_t{0} : l == ~uint64_t{0} ? l : l + static_cast<uint64_t>(e.result);
      }
      break;
    case op::copy_file_range:  // an offset of -1: the call passed NULL
    case op::splice:
      out.pos1 = e.offset < 0;
      out.pos2 = e.offset2 < 0;
      if (out.h1 && out.pos1 && e.result > 0) advance(handles_[out.h1].pos, e.result);
      if (out.h2 && out.pos2 && e.result > 0) advance(handles_[out.h2].pos, e.result);
      break;
    case op::sendfile:  // fd: out, always at its position; fd2: in, at `offset` (-1: NULL)
      out.pos1 = true;
      out.pos2 = e.offset < 0;
      if (out.h1 && e.result > 0) advance(handles_[out.h1].pos, e.result);
      if (out.h2 && out.pos2 && e.result > 0) advance(handles_[out.h2].pos, e.result);
      break;
    default:
      break;
  }
}

void fd_map::apply(const event& e, fd_effect& out) {
  out.clear();
  table* t = table_for(e.thread);
  thread_state& ts = threads_[e.thread];
  switch (e.kind) {
    case op::open:
    case op::openat:
    case op::openat2:
    case op::creat:
      if (e.result >= 0) {
        const uint32_t flags =
            e.kind == op::creat ? static_cast<uint32_t>(O_CREAT | O_WRONLY | O_TRUNC) : e.flags;
        out.h1 = new_handle(flags, e.path, 0, e.file);
        out.opened = true;
        allocate(*t, static_cast<int32_t>(e.result), out.h1, flags & O_CLOEXEC, e.ts + e.dur,
                 out);
      }
      return;
    case op::fd_bind:
      out.h1 = new_handle(e.flags, e.path, e.offset, e.file);
      if (e.aux) handles_[out.h1].listed = e.aux == ~uint64_t{0} ? e.aux : e.aux - 1;
      out.opened = true;
      install(*t, e.fd, out.h1, e.flags & O_CLOEXEC, out);
      return;
    case op::close:
      out.h1 = lookup(*t, e.fd, e.ts);
      if (e.result != -EBADF) close_at(*t, e.fd, e.ts, out);
      return;
    case op::dup:
      out.h1 = lookup(*t, e.fd, e.ts);
      if (out.h1 && e.result >= 0)
        allocate(*t, static_cast<int32_t>(e.result), out.h1, false, e.ts + e.dur, out);
      return;
    case op::dup2:
    case op::dup3:
      out.h1 = lookup(*t, e.fd, e.ts);
      if (e.result < 0 || e.fd == e.fd2) return;
      if (out.h1)
        install(*t, e.fd2, out.h1, e.kind == op::dup3 && (e.flags & O_CLOEXEC), out);
      else  // a pipe or socket the trace does not follow: the file fd2 held is closed all the same
        remove(*t, e.fd2, out);
      return;
    case op::fcntl:
      out.h1 = lookup(*t, e.fd, e.ts);
      if (!out.h1 || e.result < 0) return;
      if (e.aux == F_DUPFD || e.aux == F_DUPFD_CLOEXEC)
        allocate(*t, static_cast<int32_t>(e.result), out.h1, e.aux == F_DUPFD_CLOEXEC,
                 e.ts + e.dur, out);
      else if (e.aux == F_SETFD)
        t->fds[e.fd].cloexec = e.flags & FD_CLOEXEC;
      return;
    case op::close_range: {
      if (e.result != 0) return;
      if ((e.flags & CLOSE_RANGE_UNSHARE) && t->users > 1) {
        table* own = copy_table(*t, 0);
        leave(t, out);
        ts.t = t = own;
      }
      const uint64_t last = static_cast<uint32_t>(e.fd2);
      for (uint64_t fd = static_cast<uint32_t>(e.fd); fd <= last && fd < t->fds.size(); ++fd) {
        if (e.flags & CLOSE_RANGE_CLOEXEC)
          t->fds[fd].cloexec = true;
        else
          remove(*t, static_cast<int32_t>(fd), out);
      }
      return;
    }
    case op::clone:
    case op::clone3:
    case op::fork:
    case op::vfork: {
      if (e.result <= 0) return;
      table* child;
      if (e.flags & CLONE_FILES) {
        child = t;
        ++t->users;
        if (e.aux != 0 && e.aux != t->id) by_id_[static_cast<uint32_t>(e.aux)] = t;
      } else {
        child = copy_table(*t, static_cast<uint32_t>(e.aux));
      }
      child_table_[child_key(info_[e.thread], static_cast<int32_t>(e.result))] = child;
      return;
    }
    case op::execve:
    case op::execveat:
      if (e.result != 0) return;
      if (e.aux != 0 && e.aux != t->id) {  // a shared table is unshared by exec
        table* own = copy_table(*t, static_cast<uint32_t>(e.aux));
        leave(t, out);
        ts.t = t = own;
      }
      for (size_t fd = 0; fd < t->fds.size(); ++fd)
        if (t->fds[fd].cloexec) remove(*t, static_cast<int32_t>(fd), out);
      return;
    case op::exit:
      leave(t, out);
      ts.t = nullptr;
      return;
    default:
      break;
  }
  if (has(e.kind, F_FD)) out.h1 = lookup(*t, e.fd, e.ts);
  if (has(e.kind, F_FD2)) out.h2 = lookup(*t, e.fd2, e.ts);
  track_position(e, out);
}

const fd_map::table* fd_map::current_table(thread_id t) const {
  if (t < threads_.size() && threads_[t].t) return threads_[t].t;
  if (t >= info_.size() || (t < threads_.size() && threads_[t].started)) return nullptr;
  if (const auto c = child_table_.find(child_key(info_[t], info_[t].tid)); c != child_table_.end())
    return c->second;
  if (const auto k = by_id_.find(info_[t].fd_table); info_[t].fd_table && k != by_id_.end())
    return k->second;
  return nullptr;
}

uint64_t fd_map::table_identity(thread_id t) const {
  const table* tab = current_table(t);
  return tab ? reinterpret_cast<uintptr_t>(tab) : 0;
}

std::vector<open_fd> fd_map::open_fds(thread_id t) const {
  std::vector<open_fd> v;
  const table* found = current_table(t);
  if (!found) return v;
  const table& tab = *found;
  for (size_t fd = 0; fd < tab.fds.size(); ++fd)
    if (tab.fds[fd].h != no_handle)
      v.push_back({static_cast<int32_t>(fd), tab.fds[fd].h, tab.fds[fd].cloexec});
  return v;
}

std::vector<handle_id> fd_map::live() const {
  std::vector<handle_id> v;
  for (handle_id h = 1; h < handles_.size(); ++h)
    if (handles_[h].refs > 0) v.push_back(h);
  return v;
}

}  // namespace fsrr
