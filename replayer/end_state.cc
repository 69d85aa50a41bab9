#include "end_state.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "fd_map.h"

namespace fsrr {
namespace {

// One inode: what compare() will check, and whether the workload changed it.
struct object {
  expected_entry x;
  bool touched = false;
  file_id file = no_id;  // the inode in the trace, where known: what its content is kept by
  bool content_done = false;
  uint32_t taken = 0;  // names take() has handed out
};

// The namespace as a tree of names, so a renamed directory takes its contents along.
struct node {
  std::shared_ptr<object> obj;
  std::map<std::string, std::unique_ptr<node>> children;
  node() = default;
  node(const node&) = delete;
  node& operator=(const node&) = delete;
  // Without recursion: a trace may nest directories thousands deep.
  ~node() {
    std::vector<std::unique_ptr<node>> todo;
    for (auto& [name, child] : children) todo.push_back(std::move(child));
    children.clear();
    while (!todo.empty()) {
      std::unique_ptr<node> n = std::move(todo.back());
      todo.pop_back();
      for (auto& [name, child] : n->children) todo.push_back(std::move(child));
      n->children.clear();
    }
  }
};

std::vector<std::string> components(const std::string& p) {
  std::vector<std::string> v;
  size_t pos = 1;
  while (pos < p.size()) {
    size_t end = p.find('/', pos);
    if (end == std::string::npos) end = p.size();
    if (end > pos) v.push_back(p.substr(pos, end - pos));
    pos = end + 1;
  }
  return v;
}

std::shared_ptr<object> new_object(uint32_t type) {
  auto o = std::make_shared<object>();
  o->x.mode = type;
  o->x.check_mode = false;  // created with the recorded process's umask, which is unknown
  o->x.check_mtime = false;
  o->x.check_owner = false;
  o->x.check_xattrs = false;
  o->x.check_size = S_ISREG(type);
  o->touched = true;
  return o;
}

}  // namespace

class end_state_model::impl {
 public:
  explicit impl(trace_reader& r) : r_(r), fds_(threads(r)), flow_(r) {
    root_.obj = new_object(S_IFDIR);
  }

  void load_tree() {
    // Entry by entry, not through expected_from_tree(): its map would double the peak.
    std::unordered_map<uint32_t, std::shared_ptr<object>> groups;
    const auto& tree = r_.tree();
    for (size_t i = 0; i < tree.size(); ++i) {
      if (!expected_in_tree(tree[i])) continue;
      const uint32_t group = tree[i].link_group;
      std::shared_ptr<object> fresh;
      std::shared_ptr<object>& o = group ? groups[group] : fresh;
      if (!o) {
        o = std::make_shared<object>();
        o->x = expected_of(r_, i);
      }
      make(r_.placed_path(tree[i].path))->obj = o;
      next_group_ = std::max(next_group_, group + 1);
    }
    for (const tree_entry& e : tree)
      if (e.file)
        if (node* n = find(r_.placed_path(e.path))) {
          files_[e.file] = n->obj;
          n->obj->file = e.file;
        }
  }

  void apply(const event& e) {
    fd_effect fx;
    fds_.apply(e, fx);
    flow_.apply(e, fx, fds_);
    // Handles the event let go of are free for the next open: without this the handle table
    // grows with every open of the trace (a tenth of verify's memory), not with its open fds.
    for (const handle_id h : fx.released) fds_.recycle(h);
    if (e.result < 0) return;
    switch (e.kind) {
      case op::open:
      case op::openat:
      case op::openat2:
      case op::creat:
        return open(e);
      case op::fd_bind:  // a file found open: the one at its path
        if (node* n = e.file ? find(path(e.path)) : nullptr) {
          files_[e.file] = n->obj;
          if (!n->obj->file) n->obj->file = e.file;
        }
        return;
      case op::write:
      case op::pwrite64:
      case op::writev:
      case op::pwritev:
      case op::pwritev2:
        return grow(file(e.file), e.offset + e.result);
      case op::copy_file_range:  // out at its position (which fd_map has moved) or at offset2
        return grow(file(e.file2),
                    fx.pos2 ? (fx.h2 ? fds_.handle(fx.h2).pos : 0) : e.offset2 + e.result);
      case op::sendfile:  // out at its position, which fd_map has just moved past the data
        if (fx.h1) grow(file(e.file), fds_.handle(fx.h1).pos);
        return;
      case op::ioctl:
        return clone(e);
      case op::ftruncate:
        return resize(file(e.file), e.size);
      case op::truncate:
        return resize(at(e.path), e.size);
      case op::fallocate:
        return allocate(e);
      case op::mkdir:
      case op::mkdirat:
        return place(path(e.path), new_object(S_IFDIR));
      case op::mknod:
      case op::mknodat:
        if (S_ISCHR(e.mode) || S_ISBLK(e.mode)) return;  // never created by a replay
        return place(path(e.path), new_object((e.mode & S_IFMT) ? e.mode & S_IFMT : S_IFREG));
      case op::symlink:
      case op::symlinkat: {
        auto o = new_object(S_IFLNK);
        if (e.aux) o->x.target = r_.string(static_cast<string_id>(e.aux));
        return place(path(e.path), o);
      }
      case op::link:
      case op::linkat:
        if (auto o = at(e.path)) place(path(e.path2), o);
        return;
      case op::unlink:
      case op::unlinkat:
      case op::rmdir:
        return remove(path(e.path));
      case op::rename:
      case op::renameat:
      case op::renameat2:
        return rename(e);
      case op::chmod:
      case op::fchmodat:
      case op::fchmodat2:
        return set_mode(at(e.path), e.mode);
      case op::fchmod:
        return set_mode(file(e.file), e.mode);
      case op::chown:
      case op::lchown:
      case op::fchownat:
      case op::fchown:
        return set_owner(e.path && e.kind != op::fchown ? at(e.path) : file(e.file), e.aux);
      case op::utime:
      case op::utimes:
      case op::futimesat:
      case op::utimensat:
        return set_mtime(e.path && !(has(e.kind, F_FD) && e.fd >= 0) ? at(e.path) : file(e.file),
                         e.offset2);
      case op::setxattr:
      case op::lsetxattr:
      case op::fsetxattr:
      case op::removexattr:
      case op::lremovexattr:
      case op::fremovexattr:
      case op::setxattrat:
      case op::removexattrat:
        return xattr(e);
      default:
        return;
    }
  }

  const fd_map& fds() const { return fds_; }

  expected_state result() {
    expected_state s;
    std::unordered_map<const object*, uint32_t> names;
    count_names(root_, names);
    walk(root_, names, s);
    for (const std::string& p : removed_)
      if (!s.count(p)) s[p].absent = true;
    return s;
  }

  // result(), taking the model apart as it goes: each node is freed once its entry is out,
  // so the model and the state it becomes are never both whole. `each` gets the state in
  // parts of about `batch` entries: first the names removed, then the namespace depth first.
  void take(size_t batch, const std::function<void(expected_state&)>& each) {
    files_.clear();  // the nodes alone hold the objects now
    std::unordered_map<const object*, uint32_t> names;
    count_names(root_, names);
    expected_state s;
    const auto flush = [&](size_t at_least) {
      if (s.size() < at_least) return;
      each(s);
      s.clear();
    };
    for (const std::string& p : removed_)
      if (!find(p)) {
        s[p].absent = true;
        flush(batch);
      }
    removed_.clear();
    std::vector<std::pair<std::unique_ptr<node>, std::string>> todo;
    const auto push_children = [&](node& n, const std::string& p) {
      for (auto it = n.children.rbegin(); it != n.children.rend(); ++it)
        todo.emplace_back(std::move(it->second), p + "/" + it->first);
      n.children.clear();
    };
    push_children(root_, "");
    while (!todo.empty()) {
      auto [n, p] = std::move(todo.back());
      todo.pop_back();
      object& o = *n->obj;
      const uint32_t count = names[&o];
      if (o.touched && S_ISREG(o.x.mode) && count > 1 && o.x.link_group == 0)
        o.x.link_group = next_group_++;
      if (S_ISREG(o.x.mode) && o.touched) content_of(o);
      o.x.changed = o.touched;
      if (++o.taken == count)
        s[p] = std::move(o.x);  // its last name
      else
        s[p] = o.x;
      push_children(*n, p);
      flush(batch);
    }
    flush(1);
  }

 private:
  static std::vector<thread_info> threads(trace_reader& r) {
    std::vector<thread_info> v(r.thread_count() + 1);
    for (thread_id t = 1; t < v.size(); ++t) v[t] = r.thread(t);
    return v;
  }

  std::string path(path_id id) { return id ? r_.placed_path(id) : std::string(); }

  node* find(const std::string& p) {
    node* n = &root_;
    for (const auto& c : components(p)) {
      auto it = n->children.find(c);
      if (it == n->children.end()) return nullptr;
      n = it->second.get();
    }
    return n;
  }
  // The node at `p`; missing parents are made as directories (the recorder missed them).
  node* make(const std::string& p) {
    node* n = &root_;
    for (const auto& c : components(p)) {
      auto& child = n->children[c];
      if (!child) {
        child = std::make_unique<node>();
        child->obj = new_object(S_IFDIR);
      }
      n = child.get();
    }
    return n;
  }
  void place(const std::string& p, std::shared_ptr<object> o) {
    if (components(p).empty()) return;
    make(p)->obj = std::move(o);
    parent_changed(p);
  }
  // Adding or removing a name changes the directory's mtime.
  void parent_changed(const std::string& p) {
    const size_t slash = p.rfind('/');
    if (node* d = find(slash == 0 ? "/" : p.substr(0, slash))) changed(d->obj);
  }
  std::shared_ptr<object> at(path_id id) {
    node* n = id ? find(path(id)) : nullptr;
    return n ? n->obj : nullptr;
  }
  std::shared_ptr<object> file(file_id id) {
    auto it = files_.find(id);
    return it == files_.end() ? nullptr : it->second;
  }
  std::unique_ptr<node> detach(const std::string& p) {
    const auto parts = components(p);
    if (parts.empty()) return nullptr;
    node* parent = &root_;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = parent->children.find(parts[i]);
      if (it == parent->children.end()) return nullptr;
      parent = it->second.get();
    }
    auto it = parent->children.find(parts.back());
    if (it == parent->children.end()) return nullptr;
    auto n = std::move(it->second);
    parent->children.erase(it);
    changed(parent->obj);
    return n;
  }
  void attach(const std::string& p, std::unique_ptr<node> n) {
    const auto parts = components(p);
    if (parts.empty() || !n) return;
    std::string parent;
    for (size_t i = 0; i + 1 < parts.size(); ++i) parent += "/" + parts[i];
    node* d = make(parent.empty() ? "/" : parent);
    d->children[parts.back()] = std::move(n);
    changed(d->obj);
  }
  void remove(const std::string& p) {
    if (detach(p)) removed_.insert(p);
  }

  void open(const event& e) {
    const uint32_t flags =
        e.kind == op::creat ? static_cast<uint32_t>(O_CREAT | O_WRONLY | O_TRUNC) : e.flags;
    const std::string p = path(e.path);
    node* n = find(p);
    if (!n && (flags & O_CREAT)) {
      n = make(p);
      n->obj = new_object(S_IFREG);
      parent_changed(p);
    }
    if (!n) return;
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && S_ISREG(n->obj->x.mode))
      resize(n->obj, 0);
    if (e.file) {
      files_[e.file] = n->obj;
      if (!n->obj->file) n->obj->file = e.file;
    }
  }
  void rename(const event& e) {
    const std::string from = path(e.path), to = path(e.path2);
    if (from.empty() || to.empty() || from == to) return;
    if (e.flags & RENAME_EXCHANGE) {
      auto a = detach(from), b = detach(to);
      attach(to, std::move(a));
      attach(from, std::move(b));
      return;
    }
    node* a = find(from);
    node* b = find(to);
    if (!a) return;
    if (b && b->obj == a->obj) return;  // two names of one inode: rename(2) leaves both
    auto n = detach(from);
    detach(to);
    removed_.insert(from);
    attach(to, std::move(n));
  }
  void clone(const event& e) {
    auto dst = file(e.file), src = file(e.file2);
    if (!dst || !src) return;
    if (e.aux == FICLONE)
      resize(dst, src->x.size);
    else if (e.aux == FICLONERANGE)
      grow(dst, e.offset2 + static_cast<int64_t>(e.size ? e.size : src->x.size - e.offset));
  }
  void allocate(const event& e) {
    auto o = file(e.file);
    if (!o) return;
    if (e.flags & FALLOC_FL_COLLAPSE_RANGE)
      resize(o, o->x.size > e.size ? o->x.size - e.size : 0);
    else if (e.flags & FALLOC_FL_INSERT_RANGE)
      resize(o, o->x.size + e.size);
    else if (!(e.flags & FALLOC_FL_KEEP_SIZE))
      grow(o, e.offset + static_cast<int64_t>(e.size));
  }
  void xattr(const event& e) {
    const bool by_fd = !has(e.kind, F_PATH) || e.fd >= 0;  // the f* calls, and AT_EMPTY_PATH
    auto o = by_fd ? file(e.file) : at(e.path);
    if (!o || !e.aux) return;
    o->touched = true;
    const std::string& name = r_.string(static_cast<string_id>(e.aux));
    auto& v = o->x.xattrs;
    std::erase_if(v, [&](const auto& a) { return a.first == name; });
    const bool set = e.kind == op::setxattr || e.kind == op::lsetxattr || e.kind == op::fsetxattr ||
                     e.kind == op::setxattrat;
    if (set) {
      v.emplace_back(name, static_cast<uint32_t>(e.size));
      std::sort(v.begin(), v.end());
    }
    // An access ACL sets the permission bits (cp -a gives a copy its mode this way).
    if (set && name == "system.posix_acl_access" && (e.mode & acl_mode_present)) {
      o->x.check_mode = true;
      o->x.mode = (o->x.mode & ~0777u) | (e.mode & 0777);
    }
  }
  static void changed(const std::shared_ptr<object>& o) {
    o->touched = true;
    o->x.check_mtime = false;
  }
  static void grow(const std::shared_ptr<object>& o, int64_t end) {
    if (!o) return;
    changed(o);
    if (end > 0 && static_cast<uint64_t>(end) > o->x.size) o->x.size = static_cast<uint64_t>(end);
  }
  static void resize(const std::shared_ptr<object>& o, uint64_t size) {
    if (!o) return;
    changed(o);
    o->x.size = size;
  }
  static void set_mode(const std::shared_ptr<object>& o, uint32_t mode) {
    if (!o) return;
    o->touched = true;  // a mode change leaves mtime alone
    o->x.check_mode = true;
    o->x.mode = (o->x.mode & S_IFMT) | (mode & 07777);
  }
  static void set_mtime(const std::shared_ptr<object>& o, int64_t mtime_ns) {
    if (!o) return;
    changed(o);
    if (mtime_ns == time_omit) return;
    o->x.check_mtime = mtime_ns != time_now;  // set explicitly: cp -a, rsync, tar keep mtimes
    o->x.mtime_ns = mtime_ns;
  }
  static void set_owner(const std::shared_ptr<object>& o, uint64_t aux) {
    if (!o) return;
    const uint32_t uid = static_cast<uint32_t>(aux >> 32), gid = static_cast<uint32_t>(aux);
    if (!o->x.check_owner && (uid == UINT32_MAX || gid == UINT32_MAX)) return;
    o->touched = true;
    o->x.check_owner = true;
    if (uid != UINT32_MAX) o->x.uid = uid;
    if (gid != UINT32_MAX) o->x.gid = gid;
    // A chown clears a non-directory's set-uid bit, and its set-gid bit where that means
    // set-group-id rather than mandatory locking (group execute on), whoever calls it.
    if (!S_ISDIR(o->x.mode)) {
      o->x.mode &= ~uint32_t{S_ISUID};
      if (o->x.mode & S_IXGRP) o->x.mode &= ~uint32_t{S_ISGID};
    }
  }

  // Both walk the namespace with a stack of their own: a trace may nest thousands deep.
  void count_names(const node& root, std::unordered_map<const object*, uint32_t>& names) {
    std::vector<const node*> todo = {&root};
    while (!todo.empty()) {
      const node* n = todo.back();
      todo.pop_back();
      ++names[n->obj.get()];
      for (const auto& [name, child] : n->children) todo.push_back(child.get());
    }
  }
  void walk(const node& root, std::unordered_map<const object*, uint32_t>& names,
            expected_state& s) {
    std::vector<std::pair<const node*, std::string>> todo = {{&root, ""}};
    while (!todo.empty()) {
      auto [n, p] = std::move(todo.back());
      todo.pop_back();
      if (!p.empty()) {
        object& o = *n->obj;
        if (o.touched && S_ISREG(o.x.mode) && names[&o] > 1 && o.x.link_group == 0)
          o.x.link_group = next_group_++;
        if (S_ISREG(o.x.mode) && o.touched) content_of(o);
        o.x.changed = o.touched;
        s[p] = o.x;
      }
      // in reverse, so that names come off the stack (and get link groups) in order
      for (auto it = n->children.rbegin(); it != n->children.rend(); ++it)
        todo.emplace_back(it->second.get(), p + "/" + it->first);
    }
  }

  // A changed file's bytes, as the data flow has them, if it agrees on the size.
  void content_of(object& o) {
    if (o.content_done) return;
    o.content_done = true;
    o.x.check_content = false;
    if (!o.file || flow_.size_of(o.file) != o.x.size) return;  // the model misses a change
    source_list all;
    flow_.pieces_of(o.file, 0, o.x.size, all);
    o.x.content.assign(all.begin(), all.end());
    o.x.check_content = true;
  }

  trace_reader& r_;
  fd_map fds_;
  data_flow flow_;
  node root_;
  uint32_t next_group_ = 1;
  std::unordered_map<file_id, std::shared_ptr<object>> files_;
  std::set<std::string> removed_;
};

end_state_model::end_state_model(trace_reader& trace) : impl_(std::make_unique<impl>(trace)) {
  impl_->load_tree();
}
end_state_model::~end_state_model() = default;
void end_state_model::apply(const event& e) { impl_->apply(e); }
expected_state end_state_model::result() { return impl_->result(); }
expected_state end_state_model::take() {
  expected_state s;
  impl_->take(SIZE_MAX, [&](expected_state& part) { s = std::move(part); });
  return s;
}
void end_state_model::take(size_t batch, const std::function<void(expected_state&)>& each) {
  impl_->take(batch, each);
}
const fd_map& end_state_model::fds() const { return impl_->fds(); }

result<expected_state> expected_end_state(trace_reader& trace) {
  end_state_model m(trace);
  auto events = trace.events();
  event e;
  while (events.next(e)) m.apply(e);
  FSRR_TRY(events.status());
  return m.take();
}

result<void> check_end_state(trace_reader& trace, comparer& c, size_t batch) {
  end_state_model m(trace);
  auto events = trace.events();
  event e;
  while (events.next(e)) m.apply(e);
  FSRR_TRY(events.status());
  m.take(batch, [&](const expected_state& part) { c.check(part); });
  return {};
}

}  // namespace fsrr
