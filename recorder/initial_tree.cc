#include "initial_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree_snapshot.h"

namespace fsrr::recorder {
namespace {

// The event's view wins over a later look at the same object.
void overlay(tree_entry& e, const observed& o) {
  e.mode = o.mode;
  e.size = o.size;
  if (!o.full) return;
  e.allocated = o.blocks * 512;
  e.uid = o.uid;
  e.gid = o.gid;
  e.nlink = o.nlink;
  e.atime_ns = o.atime_ns;
  e.mtime_ns = o.mtime_ns;
  e.ctime_ns = o.ctime_ns;
}

// What an entry looks like when only the event describes the object.
tree_entry from_observed(path_id p, const observed* o, uint32_t type_hint) {
  tree_entry e;
  e.path = p;
  if (o && (o->mode & S_IFMT)) {
    overlay(e, *o);
    e.allocated = o->blocks * 512;  // 0 unless the event told
  } else {
    e.mode = (type_hint ? type_hint : S_IFREG) | ((type_hint == S_IFDIR) ? 0755 : 0644);
  }
  return e;
}

}  // namespace

initial_tree::initial_tree(trace_writer& w, path_table& paths, int64_t realtime_base)
    : w_(w), paths_(paths), realtime_base_(realtime_base) {}

initial_tree::~initial_tree() {
  if (open_dir_fd_ >= 0) ::close(open_dir_fd_);
}

void initial_tree::cover(path_id dir) {
  covered_.insert(dir);
}

bool initial_tree::settled(path_id p) {
  if (p < known_.size() && known_[p]) return true;
  if (covered_.empty()) return false;
  for (path_id q = p;; q = paths_.parent(q)) {
    if (covered_.count(q)) {
      if (p >= known_.size()) known_.resize(p + 1024);
      known_[p] = 1;
      return true;
    }
    if (paths_.parent(q) == q) return false;  // the top of its root
  }
}

void initial_tree::ensure_parents(path_id p) {
  std::vector<path_id> chain;
  for (path_id q = paths_.parent(p); q != p && !settled(q); q = paths_.parent(q)) {
    chain.push_back(q);
    if (q == root_path) break;
    p = q;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (*it >= known_.size()) known_.resize(*it + 1024);
    known_[*it] = 1;
    add(*it, nullptr, no_id, S_IFDIR);
  }
}

void initial_tree::created(path_id p) {
  if (p == no_id || settled(p) || !wanted(p)) return;
  if (p >= known_.size()) known_.resize(p + 1024);
  known_[p] = 1;
  if (p >= created_.size()) created_.resize(p + 1024);
  created_[p] = 1;
  ensure_parents(p);
}

void initial_tree::existed(path_id p, const observed* o, path_id where, uint32_t type_hint) {
  if (p == no_id || settled(p) || !wanted(p)) return;
  if (p >= known_.size()) known_.resize(p + 1024);
  known_[p] = 1;
  ensure_parents(p);
  add(p, o, where, type_hint);
}

void initial_tree::queue(path_id dir, uint64_t ts, pending kind) {
  if (kind == pending::lookup) {
    if (dir >= queued_.size()) queued_.resize(dir + 1024);
    if (queued_[dir]) return;
    queued_[dir] = 1;
  }
  pending_.push_back({dir, ts, kind});
}

void initial_tree::settle_pending(uint64_t ts) {
  constexpr uint64_t delay = 1'000'000'000;
  while (!pending_.empty() && (ts == UINT64_MAX || pending_.front().ts + delay < ts)) {
    const queued q = pending_.front();
    pending_.pop_front();
    if (q.kind == pending::lookup) {
      queued_[q.dir] = 0;
      settle_lookup(q.dir);
    } else {
      settle_listing(q.dir, realtime_base_ + static_cast<int64_t>(q.ts));
    }
  }
}

// The deepest ancestor that is a directory (the workload made none of them: those are
// settled). One that is a file or a symlink now ends the search with nothing added.
void initial_tree::settle_lookup(path_id dir) {
  for (path_id q = dir; !settled(q); q = paths_.parent(q)) {
    struct stat st;
    const int fd = paths_.open(q, O_PATH | O_NOFOLLOW);
    const bool there = fd >= 0 && ::fstat(fd, &st) == 0;
    if (fd >= 0) ::close(fd);
    if (there) {
      if (S_ISDIR(st.st_mode)) existed(q, nullptr, no_id, S_IFDIR);
      return;
    }
    if (paths_.parent(q) == q) return;
  }
}

// An entry whose ctime is clearly before the read was there at the read, unchanged since
// (ctime is never earlier than birth; inode times tick every few ms). One changed since is
// left to the workload's own touches, which say what it was before: a snapshot now might
// show the change.
void initial_tree::settle_listing(path_id dir, int64_t realtime_ns) {
  constexpr int64_t slack = 20'000'000;
  const int fd = paths_.open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (fd < 0) return;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* de = ::readdir(d)) {
    const std::string_view name = de->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  for (const std::string& name : names) {
    const path_id p = paths_.child(dir, name);
    if (settled(p)) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) continue;  // devices are never replayed
    const int64_t ctime = int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
    if (ctime + slack >= realtime_ns) continue;
    observed o;
    o.dev = st.st_dev;
    o.ino = st.st_ino;
    o.mode = st.st_mode;
    o.uid = st.st_uid;
    o.gid = st.st_gid;
    o.nlink = static_cast<uint32_t>(st.st_nlink);
    o.size = static_cast<uint64_t>(st.st_size);
    o.blocks = static_cast<uint64_t>(st.st_blocks);
    o.atime_ns = int64_t(st.st_atim.tv_sec) * 1'000'000'000 + st.st_atim.tv_nsec;
    o.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    o.ctime_ns = ctime;
    o.full = true;
    if (file_of_ && !S_ISDIR(st.st_mode)) o.file = file_of_(o.dev, o.ino, o.mode);
    existed(p, &o, no_id, st.st_mode & S_IFMT);
  }
  ::closedir(d);
}

int initial_tree::dir_fd(path_id dir) {
  if (dir == open_dir_ && open_dir_fd_ >= 0) return open_dir_fd_;
  if (open_dir_fd_ >= 0) ::close(open_dir_fd_);
  open_dir_ = dir;
  open_dir_fd_ = paths_.open(dir, O_PATH | O_DIRECTORY);
  return open_dir_fd_;
}

void initial_tree::add(path_id p, const observed* o, path_id where, uint32_t type_hint) {
  const path_id at = where != no_id ? where : p;
  const bool top = paths_.parent(at) == at;
  const std::string leaf(top ? std::string_view(".") : paths_.name(at));
  const int dirfd = dir_fd(paths_.parent(at));
  const char* name = leaf.c_str();

  std::optional<tree_entry> e;
  if (dirfd >= 0) e = snapshot_entry(w_, dirfd, name, p);
  std::pair<uint64_t, uint64_t> id{0, 0};  // (dev, ino) of what `e` describes, when known
  const auto look = [&] {
    struct stat st;
    if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) id = {st.st_dev, st.st_ino};
  };
  if (e && o) {
    const bool unchanged =
        o->full && (e->mode & S_IFMT) == (o->mode & S_IFMT) && e->ctime_ns == o->ctime_ns;
    if (unchanged) {
      id = {o->dev, o->ino};
    } else {  // changed since the touch, replaced, or the touch followed this symlink
      look();
      if (id == std::pair<uint64_t, uint64_t>(o->dev, o->ino)) {
      } else if (S_ISLNK(e->mode) && !S_ISLNK(o->mode)) {
        o = nullptr;  // a stat that followed the link described its target
      } else {
        e.reset();  // another object is there now: only the event describes the original
      }
    }
  }
  if (e) {
    if (o && (o->mode & S_IFMT)) overlay(*e, *o);
  } else {
    e = from_observed(p, o, type_hint);
    if (o) id = {o->dev, o->ino};
  }
  if (o) e->file = o->file;
  if (!S_ISDIR(e->mode) && e->nlink > 1) {
    if (id.second == 0) look();
    e->link_group = w_.link_group(id.first, id.second);
  }
  w_.add_tree_entry(*e);
}

}  // namespace fsrr::recorder
