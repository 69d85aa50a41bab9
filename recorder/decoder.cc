#include "decoder.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <algorithm>
#include <cstring>

namespace fsrr::recorder {
namespace {

// Kernel dev_t (major << 20 | minor) as user space spells it.
uint64_t user_dev(uint32_t kdev) {
  return makedev(kdev >> 20, kdev & 0xfffff);
}

bool is_tty_major(unsigned major) {
  return major == 4 || major == 5 || (major >= 136 && major <= 143);
}

std::string comm_of(const char (&comm)[16]) {
  return std::string(comm, ::strnlen(comm, 16));
}

// CLOCK_REALTIME at a CLOCK_MONOTONIC time, from a pair of readings now.
int64_t realtime_of(uint64_t monotonic_ns) {
  timespec mono, real;
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  ::clock_gettime(CLOCK_REALTIME, &real);
  const int64_t now_mono = int64_t(mono.tv_sec) * 1'000'000'000 + mono.tv_nsec;
  const int64_t now_real = int64_t(real.tv_sec) * 1'000'000'000 + real.tv_nsec;
  return now_real - (now_mono - int64_t(monotonic_ns));
}

}  // namespace

decoder::decoder(trace_writer& w, uint64_t clock_base, root_registry& roots)
    : w_(w),
      base_(clock_base),
      paths_(w),
      tree_(w, paths_, realtime_of(clock_base)),
      registry_(roots) {
  tree_.identify_files(
      [this](uint64_t dev, uint64_t ino, uint32_t mode) { return file_of_stat(dev, ino, mode); });
}

// Roots are numbered in the order the trace meets them: root 1, whose top is root_path, is the
// first traced process's (fsrr's own when it snapshots directories first).
uint32_t decoder::root_for(const fsrr_root& r, int32_t pid) {
  const root_key key = root_key::of(r);
  for (size_t k = 0; k < roots_.size(); ++k)
    if (roots_[k].dir->key == key) return static_cast<uint32_t>(k + 1);
  const root_dir& dir = registry_.find_or_grab(key, pid);
  root_state s;
  s.dir = &dir;
  s.number = w_.add_root({root_path, key.mnt_ns, dir.dev ? dir.dev : user_dev(r.dev), key.ino,
                          w_.intern_string(dir.where)});
  s.top = w_.root_top(s.number);
  s.mounts = dir.mounts;
  paths_.add_top(s.top, dir.fd.get());
  const auto below = [](const std::string& p, const std::string& dir) {  // p beneath dir
    return p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/';
  };
  for (const std::string& k : kept_) {  // as the root's processes name it
    if (dir.where == "/" || k == dir.where || below(dir.where, k))  // all of the root, if below
      kept_ids_.push_back(dir.where == "/" ? paths_.from_absolute(s.top, k) : s.top);
    else if (below(k, dir.where))
      kept_ids_.push_back(paths_.from_absolute(s.top, k.substr(dir.where.size())));
  }
  inside_.clear();
  roots_.push_back(std::move(s));
  return static_cast<uint32_t>(roots_.size());
}

decoder::root_state& decoder::root_at(path_id top) {
  for (root_state& s : roots_)
    if (s.top == top) return s;
  root_for(registry_.self().key.bpf(), 0);  // a path before any root: fsrr's own
  return roots_.front();
}

path_id decoder::top_of(const task& t) {
  if (t.root) return roots_[t.root - 1].top;
  return root_at(root_path).top;
}

// Below the task's root; or, for a walk that ended at the top of the mount tree whose root is
// fsrr's own (a file opened before a chroot or an unshare), below fsrr's root, as /proc shows
// such files. no_id for anything else.
path_id decoder::walk_path(const task& t, const walk_view& w) {
  if (!w.present) return no_id;
  if (!(w.flags & FSRR_WALK_UNREACHABLE)) return paths_.from_walk(top_of(t), w.bytes);
  if (w.flags & FSRR_WALK_RECORDER_ROOT) return paths_.from_walk(own_root_top(), w.bytes);
  return no_id;
}

void decoder::keep_only(std::vector<std::string> dirs, std::function<void()> replaced) {
  kept_ = std::move(dirs);
  kept_replaced_ = std::move(replaced);
  tree_.keep_only([this](path_id p) { return kept_.empty() || inside(p); });
}

bool decoder::shm_object(path_id p, const fsrr_file& f) const {
  constexpr uint32_t tmpfs_magic = 0x01021994;
  if (p == no_id || !S_ISREG(f.mode) || f.magic != tmpfs_magic) return false;
  const path_id shm = paths_.parent(p), dev = paths_.parent(shm);
  return shm != p && paths_.name(shm) == "shm" && paths_.name(dev) == "dev" &&
         paths_.parent(dev) == paths_.top(p);
}

bool decoder::names_kept_dir(path_id p) {
  if (p == no_id) return false;
  for (path_id k : kept_ids_)
    for (path_id q = k;; q = paths_.parent(q)) {
      if (q == p) return true;
      if (paths_.parent(q) == q) break;
    }
  return false;
}

bool decoder::inside(path_id p) {
  std::vector<path_id> chain;  // p and its ancestors not answered yet
  uint8_t answer = 1;
  for (path_id q = p;; q = paths_.parent(q)) {
    if (q < inside_.size() && inside_[q]) {
      answer = inside_[q];
      break;
    }
    chain.push_back(q);
    if (std::find(kept_ids_.begin(), kept_ids_.end(), q) != kept_ids_.end()) {
      answer = 2;
      break;
    }
    if (paths_.parent(q) == q) break;  // a top
  }
  for (path_id q : chain) {
    if (q >= inside_.size()) inside_.resize(q + q / 2 + 1024, 0);
    inside_[q] = answer;
  }
  return answer == 2;
}

path_id decoder::own_root_top() {
  return roots_[root_for(registry_.self().key.bpf(), 0) - 1].top;
}

void decoder::on_record(std::span<const uint8_t> record) {
  ++stats_.records;
  const auto* h = header_as<fsrr_rec_hdr>(record);
  if (!h || h->len != record.size()) {
    ++stats_.malformed;
    return;
  }
  switch (h->type) {
    case FSRR_REC_SYSCALL:
      on_syscall(record);
      break;
    case FSRR_REC_TASK:
      on_task(record);
      break;
    case FSRR_REC_FORK:
      on_fork(record);
      break;
    case FSRR_REC_EXEC:
      on_exec(record);
      break;
    case FSRR_REC_EXIT:
      on_exit(record);
      break;
    case FSRR_REC_CWD:
      on_cwd(record);
      break;
    case FSRR_REC_FD:
      on_fd(record);
      break;
    case FSRR_REC_URING:
      on_uring(record);
      break;
    case FSRR_REC_MMAP_WRITE:
      on_mmap_write(record);
      break;
    case FSRR_REC_URING_NAMES:
      on_uring_names(record);
      break;
    default:
      ++stats_.malformed;
  }
}

void decoder::finish() {
  tree_.settle_pending(UINT64_MAX);
  // AIO requests the kernel ran that no io_getevents reaped while recording: not in the trace
  if (!aio_pending_.empty()) w_.mark_incomplete(incomplete_aio);
}

size_t decoder::tracked() const {
  return tasks_.size() + inodes_.size() + at_path_.size() + not_storage_.size() + child_files_.size() +
         exec_path_.size() + fds_.entries() + paths_.size() + uring_files_.size() +
         aio_pending_.size();
}

string_id decoder::name_id(std::string_view name) {
  if (const auto it = names_.find(name); it != names_.end()) return it->second;
  const string_id id = w_.intern_string(name);
  if (names_.size() < 4096) names_.emplace(name, id);  // xattr names; not every symlink target
  return id;
}

void decoder::unresolved() {
  if (stats_.unresolved++ == 0) w_.mark_incomplete(incomplete_path_unresolved);
}

decoder::task& decoder::task_of(int32_t tid, int32_t pid, uint64_t files, uint64_t fs) {
  auto [it, added] = tasks_.try_emplace(tid);
  task& t = it->second;
  if (added) {
    t.pid = pid;
    t.comm.assign(1, '?');
    t.files = files;
    t.fs = fs;
  }
  if (files && t.files != files) {
    // unshare(CLONE_FILES), close_range(CLOSE_RANGE_UNSHARE): a private copy
    if (!fds_.has(files) && t.files) fds_.copy(t.files, files);
    t.files = files;
  }
  if (fs && t.fs != fs) {  // unshare(CLONE_FS)
    if (t.fs) fds_.copy_cwd(t.fs, fs);
    t.fs = fs;
  }
  return t;
}

decoder::task& decoder::task_of(int32_t tid) {
  if (auto it = tasks_.find(tid); it != tasks_.end()) return it->second;
  return task_of(tid, tid, 0);  // its announcement was lost
}

// The trace has a thread's ids as it saw them, and as fsrr did (host_*).
thread_id decoder::thread_of(task& t, int32_t tid) {
  if (t.id == no_id) {
    thread_info i;
    i.host_tid = tid;
    i.host_pid = t.pid;
    i.tid = t.own.tid ? static_cast<int32_t>(t.own.tid) : tid;
    i.pid = t.own.tid ? static_cast<int32_t>(t.own.pid) : t.pid;
    i.ppid = t.own.tid ? static_cast<int32_t>(t.own.ppid) : t.ppid;
    i.comm = w_.intern_string(t.comm);
    i.fd_table = fds_.id_of(t.files);
    i.root = t.root ? roots_[t.root - 1].number : root_at(root_path).number;
    t.id = w_.add_thread(i);
  }
  return t.id;
}

void decoder::on_task(std::span<const uint8_t> record) {
  const auto* h = header_as<fsrr_task>(record);
  if (!h) return;
  task& t = task_of(static_cast<int32_t>(h->h.tid), static_cast<int32_t>(h->pid), h->files, h->fs);
  t.ppid = static_cast<int32_t>(h->ppid);
  if (t.id == no_id) {
    t.comm = comm_of(h->comm);
    t.own = h->ids;
  }
  if (h->root.mnt_ns) t.root = root_for(h->root, t.pid);  // 0: exiting, no fs_struct
}

void decoder::on_fork(std::span<const uint8_t> record) {
  const auto* h = header_as<fsrr_fork>(record);
  if (!h) return;
  const auto tid = static_cast<int32_t>(h->h.tid);
  const auto pid = static_cast<int32_t>(h->pid);
  task& parent = task_of(static_cast<int32_t>(h->parent_tid), static_cast<int32_t>(h->parent_pid),
                         h->parent_files, h->parent_fs);
  if (h->files != h->parent_files) fds_.copy(h->parent_files, h->files);
  if (h->fs != h->parent_fs) fds_.copy_cwd(h->parent_fs, h->fs);
  task child;
  child.pid = pid;
  child.ppid = pid == parent.pid ? parent.ppid : parent.pid;  // a thread has its process's parent
  child.comm = comm_of(h->comm);
  child.files = h->files;
  child.fs = h->fs;
  child.own = h->ids;
  child.root = h->root.mnt_ns ? root_for(h->root, pid) : parent.root;
  tasks_[tid] = std::move(child);
  // The clone event is the parent's: it names the child as the parent's namespace does.
  child_files_[{static_cast<int32_t>(h->parent_tid), static_cast<int32_t>(h->tid_for_parent)}] =
      h->files;
}

void decoder::on_exec(std::span<const uint8_t> record) {
  record_items it;
  const auto* h = parsed<fsrr_exec>(record, it);
  if (!h) return;
  const auto tid = static_cast<int32_t>(h->h.tid);
  const auto old = static_cast<int32_t>(h->old_tid);
  if (old != tid) {  // a non-leader thread exec'd and took over the process's pid
    if (auto n = tasks_.extract(old)) {
      n.key() = tid;
      tasks_.erase(tid);
      tasks_.insert(std::move(n));
    }
  }
  task& t = task_of(tid, static_cast<int32_t>(h->pid), h->files);
  fds_.exec(h->files);
  if (t.id == no_id) {
    t.comm = comm_of(h->comm);
    t.own = h->ids;
  }
  if (const path_id p = walk_path(t, it.walk[0]); p != no_id) {
    exec_path_[tid] = p;
    if (!off_storage(p)) tree_.existed(p);
  }
}

void decoder::on_exit(std::span<const uint8_t> record) {
  const auto* h = header_as<fsrr_exit>(record);
  if (!h) return;
  const auto tid = static_cast<int32_t>(h->h.tid);
  event e;
  e.kind = op::exit;
  e.ts = trace_time(h->h.ts);
  e.result = h->code;
  e.thread = thread_of(task_of(tid, static_cast<int32_t>(h->pid), h->files, h->fs), tid);
  w_.append(e);
  if (h->h.flags & FSRR_EXIT_LAST_FILES) fds_.release(h->files);
  if (h->h.flags & FSRR_EXIT_LAST_FS) fds_.release_fs(h->fs);
  tasks_.erase(tid);
  exec_path_.erase(tid);
  // children whose clone the trace never showed (one in flight when recording began)
  child_files_.erase(child_files_.lower_bound({tid, INT32_MIN}),
                     child_files_.upper_bound({tid, INT32_MAX}));
}

void decoder::on_cwd(std::span<const uint8_t> record) {
  record_items it;
  const auto* h = parsed<fsrr_cwd>(record, it);
  if (!h) return;
  if (const path_id p = walk_path(task_of(static_cast<int32_t>(h->h.tid)), it.walk[0]); p != no_id)
    fds_.set_cwd(h->fs, p);
}

// An fd met for the first time: inherited, opened before recording, or passed in.
void decoder::on_fd(std::span<const uint8_t> record) {
  record_items it;
  const auto* h = parsed<fsrr_fd>(record, it, true);
  if (!h) return;
  const fsrr_file& f = *it.file[0];
  const auto tid = static_cast<int32_t>(h->h.tid);
  task& t = task_of(tid, static_cast<int32_t>(h->pid), h->files);
  if (t.id == no_id) {
    t.comm = comm_of(h->comm);
    t.ppid = static_cast<int32_t>(h->ppid);
    t.own = h->ids;
  }
  if (h->root.mnt_ns) t.root = root_for(h->root, t.pid);
  if (const fd_entry* known = fds_.find(h->files, h->fd); known && known->kfile == f.file) return;
  if (const auto kind = nonfile_kind(f)) return bind_nonfile(h->files, h->fd, f, *kind);
  const walk_view& walk = it.walk[0];
  const path_id path = walk_path(t, walk);
  // A file outside the process's root and fsrr's (a log the parent of a chroot passed in):
  // nothing either can name, to replay ops on. Counted as a pipe would be.
  if (path == no_id && walk.present && (walk.flags & FSRR_WALK_UNREACHABLE))
    return bind_nonfile(h->files, h->fd, f, fd_kind::other);
  const file_id id = file_of(f);
  if (path != no_id) {
    if (!(walk.flags & FSRR_WALK_DELETED)) {
      const observed o = observe(f, it.attr[0], id);
      tree_.existed(path, &o);
    }
  }
  if (path == no_id) unresolved();
  bind(h->files, h->fd, f, id, path, false);
  if (!kept_.empty() && path != no_id && !inside(path)) return;  // bound, not in the trace
  event e;
  e.kind = op::fd_bind;
  e.ts = trace_time(h->h.ts);
  e.thread = thread_of(t, tid);
  e.fd = h->fd;
  e.file = id;
  e.path = path;
  e.offset = f.pos;
  e.flags = f.f_flags;
  w_.append(e);
}

// file_info.gen is the incarnation of (dev, ino) within this trace: 0, then +1 whenever the
// kernel's i_generation shows the inode number was reused. Small numbers cost nothing in
// the trace (tmpfs generations are random), and stat() results, which carry no generation,
// name the same file the fds do. An inode the table dropped (inode_table) and meets again is
// interned again as incarnation 0: it gets back the id it had, or, if its number was reused
// in between, the id of that number's first file.
file_id decoder::file_of(const fsrr_file& f) {
  const uint64_t dev = user_dev(f.dev);
  auto [n, added] = inodes_.at(dev, f.ino);
  if (added || (n.gen_known && n.gen != f.gen)) new_incarnation(n, dev, f.ino, f.mode, !added);
  n.gen = f.gen;
  n.gen_known = true;
  return n.id;
}

file_id decoder::file_of_stat(uint64_t dev, uint64_t ino, uint32_t mode) {
  auto [n, added] = inodes_.at(dev, ino);
  if (added) new_incarnation(n, dev, ino, mode, false);
  return n.id;
}

void decoder::new_incarnation(inode_state& n, uint64_t dev, uint64_t ino, uint32_t mode,
                              bool reused) {
  const uint32_t incarnation = reused ? n.incarnation + 1 : 0;
  n = {};
  n.incarnation = incarnation;
  n.id = w_.intern_file({dev, ino, incarnation, mode & S_IFMT});
}

std::optional<fd_kind> decoder::nonfile_kind(const fsrr_file& f) {
  switch (f.mode & S_IFMT) {
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
      if (pseudo_fs(f.magic)) return fd_kind::other;  // /proc/..., /sys/..., an anon inode
      return std::nullopt;
    case S_IFIFO:
      return fd_kind::pipe;
    case S_IFSOCK:
      return fd_kind::socket;
    case S_IFCHR:
      return is_tty_major(major(user_dev(f.rdev))) ? fd_kind::tty : fd_kind::other;
    default:
      return fd_kind::other;  // block devices, anonymous inodes (eventfd, epoll, ...)
  }
}

// The BPF side describes an fd (an FD record, or the open that made it) before the first
// syscall record that names it, so the fd table knows every open fd a record mentions.
decoder::fd_ref decoder::fd_of(uint64_t files, int64_t fd, const fsrr_fdref* ref) {
  fd_ref r;
  if (!ref || !ref->file) return r;  // not open
  const fd_entry* e = fds_.find(files, static_cast<int>(fd), ref->file);
  if (!e) {
    unresolved();  // its description was lost
    return r;
  }
  r.nonfile = e->nonfile;
  r.kind = e->kind;
  r.file = e->file;
  r.path = e->path;
  if (!r.nonfile && r.path == no_id) unresolved();
  return r;
}

observed decoder::observe(const fsrr_file& f, const fsrr_attr* a, file_id id) const {
  observed o;
  o.dev = user_dev(f.dev);
  o.ino = f.ino;
  o.mode = f.mode;
  o.size = static_cast<uint64_t>(f.size);
  o.file = id;
  if (a) {
    o.full = true;
    o.uid = a->uid;
    o.gid = a->gid;
    o.nlink = a->nlink;
    o.blocks = a->blocks;
    o.atime_ns = a->atime_ns;
    o.mtime_ns = a->mtime_ns;
    o.ctime_ns = a->ctime_ns;
  }
  return o;
}

void decoder::seen_at(file_id file, const fsrr_file& f, path_id path) {
  if (path == no_id) return;
  hold(path, {file, f.mode & S_IFMT});
}

void decoder::bind(uint64_t files, int fd, const fsrr_file& f, file_id id, path_id path,
                   bool cloexec) {
  fds_.bind(files, fd, {f.file, id, path, cloexec});
  seen_at(id, f, path);
}

void decoder::bind_nonfile(uint64_t files, int fd, const fsrr_file& f, fd_kind kind) {
  fd_entry e{.kfile = f.file, .nonfile = true, .kind = kind};
  std::tie(e.stream_out, e.stream_in) = stream_ends(f, kind);
  fds_.bind(files, fd, e);
}

std::pair<file_id, file_id> decoder::stream_ends(const fsrr_file& f, fd_kind kind) {
  switch (f.mode & S_IFMT) {
    case S_IFIFO: {  // both ends of a pipe are one inode
      const file_id pipe = w_.intern_file({user_dev(f.dev), f.ino, 0, S_IFIFO});
      return {pipe, pipe};
    }
    case S_IFSOCK:  // only Unix sockets have a peer the trace may hold
      if (f.peer) return {socket_stream(f.sk, f.ino), socket_stream(f.peer, 0)};
      return {no_id, no_id};
    case S_IFCHR:  // what a device yields (/dev/zero: zeros); a tty's input is a person's
      if (kind != fd_kind::tty) return {no_id, w_.intern_file({user_dev(f.rdev), 0, 0, S_IFCHR})};
      return {no_id, no_id};
    default:
      return {no_id, no_id};
  }
}

// Streams of sockets have no device: dev ~0 keeps them apart from every inode.
file_id decoder::socket_stream(uint64_t sk, uint64_t ino) {
  socket_end& s = sockets_[sk];
  if (s.stream == no_id || (ino && s.ino && s.ino != ino)) {
    s.stream = w_.intern_file({~uint64_t{0}, ++next_socket_, 0, S_IFSOCK});
    s.ino = 0;
  }
  if (ino) s.ino = ino;
  return s.stream;
}

}  // namespace fsrr::recorder
