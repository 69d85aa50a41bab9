#include "initial_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

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

void initial_tree::absent(path_id p) {
  if (p == no_id || settled(p) || !wanted(p)) return;
  if (p >= known_.size()) known_.resize(p + 1024);
  known_[p] = 1;
  if (p >= created_.size()) created_.resize(p + 1024);
  created_[p] = 1;  // its directories are left to the failed lookup to settle
}

void initial_tree::moved(path_id from, path_id to) {
  if (from == no_id || to == no_id || from == to) return;
  created(to);  // whatever was there, it is not what is there now
  if (to >= created_.size()) created_.resize(to + 1024);
  created_[to] = 1;
  moved_from_[to] = from;
}

path_id initial_tree::before_moves(path_id p) {
  if (moved_from_.empty()) return p;
  std::vector<std::string_view> names;  // below the directory found, deepest last
  for (int moves = 0; moves < 256; ++moves) {
    path_id q = p;
    names.clear();
    for (;;) {
      const path_id up = paths_.parent(q);
      if (up == q) return p;  // nothing above was made or moved by the workload
      names.push_back(paths_.name(q));
      q = up;
      if (q < created_.size() && created_[q]) break;
    }
    const auto it = moved_from_.find(q);
    if (it == moved_from_.end()) return no_id;  // beneath a directory the workload made
    p = it->second;
    for (auto n = names.rbegin(); n != names.rend(); ++n) p = paths_.child(p, *n);
  }
  return no_id;  // a cycle of renames: no older place can be told
}

void initial_tree::existed(path_id p, const observed* o, path_id where, uint32_t type_hint) {
  if (p == no_id || settled(p) || !wanted(p)) return;
  if (p >= known_.size()) known_.resize(p + 1024);
  known_[p] = 1;
  if (const path_id was = before_moves(p); was != p) {
    if (was != no_id) existed(was, o, where != no_id ? where : p, type_hint);
    return;
  }
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

void initial_tree::link_read(path_id p, std::string_view target) {
  const auto it = unread_links_.find(p);
  if (it == unread_links_.end()) return;
  tree_entry e = std::move(it->second.entry);
  unread_links_.erase(it);
  e.target = w_.intern_string(target);
  e.size = target.size();
  w_.add_tree_entry(e);
}

void initial_tree::xattr_absent(path_id p, string_id name) {
  const auto it = changed_xattrs_.find(p);
  if (it == changed_xattrs_.end()) return;
  auto& x = it->second.entry.xattrs;
  x.erase(std::remove_if(x.begin(), x.end(), [name](const auto& a) { return a.name == name; }),
          x.end());
}

void initial_tree::settle_pending(uint64_t ts) {
  constexpr uint64_t delay = 1'000'000'000;
  if (ts != UINT64_MAX) now_ = ts;
  // links never read (replay leaves them out, and says so), entries whose xattrs are settled
  for (auto* held : {&unread_links_, &changed_xattrs_}) {
    for (auto it = held->begin(); it != held->end();) {
      if (ts == UINT64_MAX || it->second.ts + delay < ts) {
        w_.add_tree_entry(it->second.entry);
        it = held->erase(it);
      } else {
        ++it;
      }
    }
  }
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
    // Changed since the read: kept if it was born before it all the same (a file another
    // program writes beside the workload, fsrr's own trace among them: its name was listed).
    if (ctime + slack >= realtime_ns) {
      struct statx sx;
      if (::statx(::dirfd(d), name.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) != 0 ||
          !(sx.stx_mask & STATX_BTIME) ||
          int64_t(sx.stx_btime.tv_sec) * 1'000'000'000 + sx.stx_btime.tv_nsec + slack >=
              realtime_ns)
        continue;
    }
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
  bool changed = false;  // the same object, changed between the touch and this look
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
        changed = true;
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
  if (changed && !e->xattrs.empty() && !S_ISLNK(e->mode)) {
    changed_xattrs_[p] = {std::move(*e), now_};
    return;
  }
  if (S_ISLNK(e->mode) && e->target == no_id) {
    unread_links_[p] = {std::move(*e), now_};
    return;
  }
  w_.add_tree_entry(*e);
  if (S_ISLNK(e->mode) && dirfd >= 0) add_link_target(p, dirfd, name);
}

// The link's target is walked as the kernel walks it, and each link met on the way (Debian's
// /bin -> usr/bin under /etc/alternatives/mt -> /bin/mt-gnu) joins the tree with its own
// target. Only what is unchanged since before the recording began (ctime, as settle_listing)
// is taken: what the workload made or changed is the workload's, and its own touches say
// what it was.
void initial_tree::add_link_target(path_id link, int dirfd, const char* name) {
  constexpr int64_t slack = 20'000'000;
  if (link_depth_ >= 40) return;  // the kernel's limit on links in one walk
  char buf[PATH_MAX];
  const ssize_t n = ::readlinkat(dirfd, name, buf, sizeof buf);
  if (n <= 0) return;
  const std::string_view target(buf, static_cast<size_t>(n));
  path_id at = target[0] == '/' ? paths_.top(link) : paths_.parent(link);
  for (size_t pos = 0; pos < target.size();) {
    size_t end = target.find('/', pos);
    if (end == std::string_view::npos) end = target.size();
    const std::string_view c = target.substr(pos, end - pos);
    pos = end + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      at = paths_.parent(at);
      continue;
    }
    const bool last = target.find_first_not_of('/', end) == std::string_view::npos;
    const path_id next = paths_.child(at, c);
    if (next == no_id) return;
    struct stat st;
    const int fd = paths_.open(next, O_PATH | O_NOFOLLOW);
    const bool there = fd >= 0 && ::fstat(fd, &st) == 0;
    if (fd >= 0) ::close(fd);
    if (!there || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return;
    if (last || S_ISLNK(st.st_mode)) {
      const int64_t ctime = int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
      if (ctime + slack >= realtime_base_) return;
      ++link_depth_;
      existed(next, nullptr, no_id, st.st_mode & S_IFMT);
      --link_depth_;
    }
    if (last) return;
    // on from where a link leads: the table follows leading links as the kernel does
    at = S_ISLNK(st.st_mode) ? paths_.resolve(at, std::string(c) + "/.") : next;
    if (at == no_id) return;
  }
}

}  // namespace fsrr::recorder
