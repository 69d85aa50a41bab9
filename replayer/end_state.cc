#include "end_state.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "fd_map.h"
#include "name_tree.h"

namespace fsrr {
namespace {

// What few objects have: a symlink's target, xattrs set by the workload.
struct extra {
  std::string target;
  std::vector<std::pair<std::string, uint32_t>> xattrs;  // name, value size; sorted
};

constexpr uint32_t no_tree = UINT32_MAX;

// One inode: what compare() will check, and whether the workload changed it. 48 bytes (a
// copy of 1 M files makes 1 M of them): an object the workload left alone is its tree entry,
// which take() reads again; an owner a chown set is one of the few (uid, gid) pairs a trace
// has, by number; the expected entry, with its strings and content, is made only as its part
// is handed out.
struct object {
  uint32_t mode = 0;
  uint32_t link_group = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint32_t tree = no_tree;  // the tree entry it came from
  file_id file = no_id;     // the inode in the trace, where known: what its content is kept by
  uint32_t owner = 0;       // set by a chown: its (uid, gid) in owners_; 0: the tree entry's
  bool touched : 1 = false;
  bool check_mode : 1 = true, check_size : 1 = true, check_mtime : 1 = true,
       check_owner : 1 = true, check_xattrs : 1 = true;
  std::unique_ptr<extra> more;  // set: its target and xattrs (else the tree entry's, or none)
};
static_assert(sizeof(object) == 48);
using object_id = uint32_t;  // in impl::objects_

// The components of "/a/b/c", without copying them.
template <typename F>
void for_components(std::string_view p, F&& each) {
  size_t pos = 1;
  while (pos < p.size()) {
    size_t end = p.find('/', pos);
    if (end == std::string_view::npos) end = p.size();
    if (end > pos) each(p.substr(pos, end - pos));
    pos = end + 1;
  }
}

}  // namespace

class end_state_model::impl {
 public:
  impl(trace_reader& r, model_content content)
      : r_(r),
        fds_(threads(r)),
        tree_(0, [&r](name_tree::name_ref p) { return r.path(p).name; }) {
    if (content == model_content::yes) flow_.emplace(r);
    tree_.value(name_tree::root) = new_object(S_IFDIR);
    files_.assign(r.file_count() + 1, none);
  }

  void load_tree() {
    // Entry by entry, not through expected_from_tree(): its map would double the peak.
    std::unordered_map<uint32_t, object_id> groups;
    const auto& tree = r_.tree();
    tree_obj_.assign(tree.size(), none);
    auto it = tree.begin();  // in order: each entry decoded once
    for (size_t i = 0; i < tree.size(); ++i, ++it) {
      const tree_entry e = *it;
      if (!expected_in_tree(e)) continue;
      const uint32_t group = e.link_group;
      ref v;
      if (group) {  // names of one inode: one object
        object_id& o = groups.try_emplace(group, none).first->second;
        if (o == none) o = tree_obj_[i] = tree_object(i);
        v = o;
      } else {
        v = i < tree_ref - 1 ? static_cast<ref>(tree_ref | i) : (tree_obj_[i] = tree_object(i));
      }
      tree_.value(make(r_.placed_path(e.path), v, leaf_ref(e.path))) = v;
      next_group_ = std::max(next_group_, group + 1);
    }
    for (const tree_entry& e : tree)
      if (e.file && e.file < files_.size())
        if (const name_tree::id n = find(r_.placed_path(e.path)); n != name_tree::none) {
          const ref v = tree_.value(n);
          files_[e.file] = v;
          if (!(v & tree_ref)) objects_[v].file = e.file;  // else tree_object() gives it
        }
  }

  void apply(const event& e) {
    fd_effect fx;
    fds_.apply(e, fx);
    if (flow_) flow_->apply(e, fx, fds_);
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
        if (const name_tree::id n = e.file ? find(path(e.path)) : name_tree::none;
            n != name_tree::none)
          bind(e.file, tree_.value(n));
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
        return place(e.path, new_object(S_IFDIR));
      case op::mknod:
      case op::mknodat:
        if (S_ISCHR(e.mode) || S_ISBLK(e.mode)) return;  // never created by a replay
        return place(e.path, new_object((e.mode & S_IFMT) ? e.mode & S_IFMT : S_IFREG));
      case op::bind:
        return place(e.path, new_object(S_IFSOCK));
      case op::symlink:
      case op::symlinkat: {
        const object_id o = new_object(S_IFLNK);
        if (e.aux) more(objects_[o]).target = r_.string(static_cast<string_id>(e.aux));
        return place(e.path, o);
      }
      case op::link:
      case op::linkat:
        if (const name_tree::id n = e.path ? find(path(e.path)) : name_tree::none;
            n != name_tree::none)
          place(e.path2, tree_.value(n));
        return;
      case op::unlink:
      case op::unlinkat:
      case op::rmdir:
        return remove(e.path);
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
    const name_tree::index ix = tree_.ordered();
    const std::vector<uint32_t> names = count_names(ix);
    walk(ix, [&](name_tree::id n, const std::string& p) {
      const ref v = tree_.value(n);
      s[p] = entry_of(v, count(names, v));
    });
    unique_removed();
    for (const path_id id : removed_)
      if (const std::string p = path(id); !s.count(p)) s[p].absent = true;
    return s;
  }

  // result(), taking the model apart as it goes: each object's strings are freed once its
  // last name is out, so the model and the state it becomes are never both whole. `each` gets
  // the state in parts of about `batch` entries: first the names removed, then the namespace
  // depth first.
  void take(size_t batch, const std::function<void(expected_state&)>& each) {
    files_ = {};  // the nodes alone lead to the objects now
    expected_state s;
    const auto flush = [&](size_t at_least) {
      if (s.size() < at_least) return;
      each(s);
      s.clear();
    };
    unique_removed();
    for (const path_id id : removed_)
      if (const std::string p = path(id); find(p) == name_tree::none && !s.count(p)) {
        s[p].absent = true;
        flush(batch);
      }
    removed_ = {};
    // The look-up table goes before the index comes: at 1 M files each is 16 MiB.
    tree_.forget_lookup();
    const name_tree::index ix = tree_.ordered();
    std::vector<uint32_t> names = count_names(ix);  // names of each object not yet out
    walk(ix, [&](name_tree::id n, const std::string& p) {
      const ref v = tree_.value(n);
      const uint32_t c = count(names, v);
      s[p] = entry_of(v, c);
      if (const object_id o = resolved(v); o != none && names[o] > 0 && --names[o] == 0)
        objects_[o].more.reset();  // its last name
      flush(batch);
    });
    flush(1);
  }

 private:
  static constexpr object_id none = UINT32_MAX;
  // A node's value: an object, or (tree_ref set) tree entry i as found, until something
  // changes it: then tree_obj_[i] is its object. A copy reads every entry of its source
  // tree and changes none: an object each would be 64 bytes a file for nothing.
  using ref = uint32_t;
  static constexpr ref tree_ref = 1u << 31;

  object_id resolved(ref v) const { return v & tree_ref ? tree_obj_[v & ~tree_ref] : v; }
  object& obj(ref v) {  // made from its tree entry if it has none yet
    if (!(v & tree_ref)) return objects_[v];
    object_id& o = tree_obj_[v & ~tree_ref];
    if (o == none) o = tree_object(v & ~tree_ref);
    return objects_[o];
  }
  uint32_t mode_of(ref v) const {
    const object_id o = resolved(v);
    return o == none ? r_.tree()[v & ~tree_ref].mode : objects_[o].mode;
  }
  uint32_t count(const std::vector<uint32_t>& names, ref v) const {
    const object_id o = resolved(v);
    return o == none ? 1 : names[o];
  }
  // The file id tree entry i gives its object: one the trace has, else none.
  file_id tree_file(size_t i) const {
    const file_id f = r_.tree()[i].file;
    return f < files_.size() ? f : 0;
  }

  // Depth first from the root, each directory's names in order: each(node, its path).
  template <typename F>
  void walk(const name_tree::index& ix, F&& each) const {
    std::vector<std::pair<name_tree::id, std::string>> todo;
    const auto push_children = [&](name_tree::id n, const std::string& p) {
      const auto kids = ix.children(n);  // in reverse, so that names come off the stack (and
      for (auto it = kids.end(); it != kids.begin();) {  // get link groups) in order
        --it;
        todo.emplace_back(*it, p + "/" + std::string(tree_.name(*it)));
      }
    };
    push_children(name_tree::root, "");
    while (!todo.empty()) {
      auto [n, p] = std::move(todo.back());
      todo.pop_back();
      each(n, p);
      push_children(n, p);
    }
  }

  static std::vector<thread_info> threads(trace_reader& r) {
    std::vector<thread_info> v(r.thread_count() + 1);
    for (thread_id t = 1; t < v.size(); ++t) v[t] = r.thread(t);
    return v;
  }

  std::string path(path_id id) { return id ? r_.placed_path(id) : std::string(); }

  object_id new_object(uint32_t type) {
    object& o = objects_.emplace_back();
    o.mode = type;
    o.check_mode = false;  // created with the recorded process's umask, which is unknown
    o.check_mtime = false;
    o.check_owner = false;
    o.check_xattrs = false;
    o.check_size = S_ISREG(type);
    o.touched = true;
    return static_cast<object_id>(objects_.size() - 1);
  }
  // As tree()[i] describes it.
  object_id tree_object(size_t i) {
    const tree_entry& e = r_.tree()[i];
    object& o = objects_.emplace_back();
    o.mode = e.mode;
    o.link_group = e.link_group;
    o.size = e.size;
    o.mtime_ns = e.mtime_ns;
    o.tree = static_cast<uint32_t>(i);
    o.file = tree_file(i);
    o.check_size = S_ISREG(e.mode);
    return static_cast<object_id>(objects_.size() - 1);
  }
  // Its owner: as a chown set it, or its tree entry's; 0 for an object of the workload's that
  // no chown set (not checked).
  std::pair<uint32_t, uint32_t> owner(const object& o) const {
    if (o.owner) return owners_[o.owner];
    if (o.tree == no_tree) return {0, 0};
    const tree_entry e = r_.tree()[o.tree];
    return {e.uid, e.gid};
  }
  // Its target and xattrs, to be changed: from its tree entry the first time.
  extra& more(object& o) {
    if (!o.more) {
      o.more = std::make_unique<extra>();
      if (o.tree != no_tree) {
        const tree_entry& e = r_.tree()[o.tree];
        if (S_ISLNK(e.mode)) o.more->target = r_.string(e.target);
        for (const auto& a : e.xattrs) o.more->xattrs.emplace_back(r_.string(a.name), a.size);
        std::sort(o.more->xattrs.begin(), o.more->xattrs.end());
      }
    }
    return *o.more;
  }

  // What compare() checks of a name of object `id`, which has `count` names.
  expected_entry entry_of(ref v, uint32_t count) {
    const object_id id = resolved(v);
    if (id == none) return expected_of(r_, v & ~tree_ref);  // as found
    object& o = objects_[id];
    if (!o.touched && o.tree != no_tree) return expected_of(r_, o.tree);
    if (S_ISREG(o.mode) && count > 1 && o.link_group == 0) o.link_group = next_group_++;
    expected_entry x;
    if (o.more) {
      x.target = o.more->target;
      x.xattrs = o.more->xattrs;
    } else if (o.tree != no_tree) {  // as the tree entry has them
      const tree_entry& e = r_.tree()[o.tree];
      if (S_ISLNK(e.mode)) x.target = r_.string(e.target);
      for (const auto& a : e.xattrs) x.xattrs.emplace_back(r_.string(a.name), a.size);
      std::sort(x.xattrs.begin(), x.xattrs.end());
    }
    x.mode = o.mode;
    x.check_mode = o.check_mode;
    x.size = o.size;
    x.check_size = o.check_size;
    x.mtime_ns = o.mtime_ns;
    x.check_mtime = o.check_mtime;
    std::tie(x.uid, x.gid) = owner(o);
    x.check_owner = o.check_owner;
    x.check_xattrs = o.check_xattrs;
    x.link_group = o.link_group;
    x.tree_index = o.tree == no_tree ? SIZE_MAX : o.tree;
    x.changed = true;
    if (S_ISREG(o.mode)) content_of(o, x);
    return x;
  }
  // A changed file's bytes, as the data flow has them, if it agrees on the size.
  void content_of(const object& o, expected_entry& x) {
    x.check_content = false;
    if (!flow_ || !o.file || flow_->size_of(o.file) != o.size) return;  // or a change missed
    source_list all;
    flow_->pieces_of(o.file, 0, o.size, all);
    x.content.assign(all.begin(), all.end());
    x.check_content = true;
  }

  name_tree::id find(std::string_view p) const {
    name_tree::id n = name_tree::root;
    for_components(p, [&](std::string_view c) {
      if (n != name_tree::none) n = tree_.child(n, c);
    });
    return n;
  }
  // The node at `p`, made if missing as object `leaf` (none: a new directory); missing
  // parents are made as directories (the recorder missed them).
  // `name`: the trace's own reference to p's last component (leaf_ref), if it has one.
  name_tree::id make(std::string_view p, ref leaf = none,
                     name_tree::name_ref name = name_tree::own) {
    name_tree::id n = name_tree::root;
    size_t pos = 1;
    while (pos < p.size()) {
      size_t end = p.find('/', pos);
      if (end == std::string_view::npos) end = p.size();
      if (end > pos) {
        const std::string_view c = p.substr(pos, end - pos);
        name_tree::id k = tree_.child(n, c);
        if (k == name_tree::none) {
          const bool last = p.find_first_not_of('/', end) == std::string_view::npos;
          k = last ? tree_.add(n, c, leaf != none ? leaf : new_object(S_IFDIR), name)
                   : tree_.add(n, c, new_object(S_IFDIR));
        }
        n = k;
      }
      pos = end + 1;
    }
    return n;
  }
  static bool has_name(std::string_view p) {
    bool any = false;
    for_components(p, [&](std::string_view) { any = true; });
    return any;
  }
  // "/a/b" -> ("/a", "b"); "/b" -> ("/", "b"), after lexical clean-up of empty components.
  static std::pair<std::string, std::string> split(std::string_view p) {
    std::string parent, last;
    for_components(p, [&](std::string_view c) {
      if (!last.empty()) parent += "/" + last;
      last = c;
    });
    return {parent.empty() ? "/" : parent, last};
  }
  // The last component of path(id), as the reader keeps it: what the name tree refers to
  // rather than copy it. A root's top has none of its own ("/rootN" is made up).
  name_tree::name_ref leaf_ref(path_id id) {
    return id && id < name_tree::own && r_.path(id).parent != no_id ? id : name_tree::own;
  }
  void place(path_id id, ref v) {
    const std::string p = path(id);
    if (!has_name(p)) return;
    tree_.value(make(p, v, leaf_ref(id))) = v;
    parent_changed(p);
  }
  // Adding or removing a name changes the directory's mtime.
  void parent_changed(const std::string& p) {
    const size_t slash = p.rfind('/');
    if (const name_tree::id d = find(slash == 0 ? "/" : std::string_view(p).substr(0, slash));
        d != name_tree::none)
      changed(&obj(tree_.value(d)));
  }
  object* at(path_id id) {
    const name_tree::id n = id ? find(path(id)) : name_tree::none;
    return n != name_tree::none ? &obj(tree_.value(n)) : nullptr;
  }
  object* file(file_id id) {
    return id < files_.size() && files_[id] != none ? &obj(files_[id]) : nullptr;
  }
  void bind(file_id f, ref v) {
    if (f >= files_.size()) return;
    files_[f] = v;
    // A tree entry with a file id of its own keeps it (its object, when made, has it too).
    if (resolved(v) == none && tree_file(v & ~tree_ref)) return;
    object& o = obj(v);
    if (!o.file) o.file = f;
  }
  // The node at `p`, out of the namespace with all below it (to attach() or drop()).
  std::optional<name_tree::id> detach(const std::string& p) {
    if (!has_name(p)) return std::nullopt;
    const auto [dir, name] = split(p);
    const name_tree::id parent = find(dir);
    if (parent == name_tree::none) return std::nullopt;
    const name_tree::id n = tree_.child(parent, name);
    if (n == name_tree::none) return std::nullopt;
    tree_.unlink(n);
    changed(&obj(tree_.value(parent)));
    return n;
  }
  void attach(path_id id, std::optional<name_tree::id> t) {
    if (!t) return;
    const std::string p = path(id);
    if (!has_name(p)) return tree_.drop(*t);
    const auto [dir, name] = split(p);
    const name_tree::id d = make(dir);
    if (const name_tree::id old = tree_.child(d, name); old != name_tree::none) {
      tree_.unlink(old);
      tree_.drop(old);
    }
    tree_.link(*t, d, name, leaf_ref(id));
    changed(&obj(tree_.value(d)));
  }
  void remove(path_id id) {
    const std::string p = path(id);
    if (const auto t = detach(p)) {
      tree_.drop(*t);
      note_removed(id);
    }
  }

  void open(const event& e) {
    const uint32_t flags =
        e.kind == op::creat ? static_cast<uint32_t>(O_CREAT | O_WRONLY | O_TRUNC) : e.flags;
    const std::string p = path(e.path);
    name_tree::id n = find(p);
    if (n == name_tree::none && (flags & O_CREAT) && has_name(p)) {
      n = make(p, new_object(S_IFREG), leaf_ref(e.path));
      parent_changed(p);
    }
    if (n == name_tree::none) return;
    const ref v = tree_.value(n);
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && S_ISREG(mode_of(v)))
      resize(&obj(v), 0);
    if (e.file) bind(e.file, v);
  }
  void rename(const event& e) {
    const std::string from = path(e.path), to = path(e.path2);
    if (from.empty() || to.empty() || from == to) return;
    if (e.flags & RENAME_EXCHANGE) {
      const auto a = detach(from), b = detach(to);
      attach(e.path2, a);
      attach(e.path, b);
      return;
    }
    const name_tree::id a = find(from), b = find(to);
    if (a == name_tree::none) return;
    if (b != name_tree::none && same(tree_.value(a), tree_.value(b)))
      return;  // two names of one inode: rename(2) leaves both
    auto n = detach(from);
    if (auto gone = detach(to)) tree_.drop(*gone);
    note_removed(e.path);
    attach(e.path2, n);
  }
  void clone(const event& e) {
    object* dst = file(e.file);
    object* src = file(e.file2);
    if (!dst || !src) return;
    if (e.aux == FICLONE)
      resize(dst, src->size);
    else if (e.aux == FICLONERANGE)
      grow(dst, e.offset2 + static_cast<int64_t>(e.size ? e.size : src->size - e.offset));
  }
  void allocate(const event& e) {
    object* o = file(e.file);
    if (!o) return;
    if (e.flags & FALLOC_FL_COLLAPSE_RANGE)
      resize(o, o->size > e.size ? o->size - e.size : 0);
    else if (e.flags & FALLOC_FL_INSERT_RANGE)
      resize(o, o->size + e.size);
    else if (!(e.flags & FALLOC_FL_KEEP_SIZE))
      grow(o, e.offset + static_cast<int64_t>(e.size));
  }
  void xattr(const event& e) {
    const bool by_fd = !has(e.kind, F_PATH) || e.fd >= 0;  // the f* calls, and AT_EMPTY_PATH
    object* o = by_fd ? file(e.file) : at(e.path);
    if (!o || !e.aux) return;
    o->touched = true;
    const std::string& name = r_.string(static_cast<string_id>(e.aux));
    auto& v = more(*o).xattrs;
    std::erase_if(v, [&](const auto& a) { return a.first == name; });
    const bool set = e.kind == op::setxattr || e.kind == op::lsetxattr || e.kind == op::fsetxattr ||
                     e.kind == op::setxattrat;
    if (set) {
      v.emplace_back(name, static_cast<uint32_t>(e.size));
      std::sort(v.begin(), v.end());
    }
    // An access ACL sets the permission bits (cp -a gives a copy its mode this way).
    if (set && name == "system.posix_acl_access" && (e.mode & acl_mode_present)) {
      o->check_mode = true;
      o->mode = (o->mode & ~0777u) | (e.mode & 0777);
    }
  }
  static void changed(object* o) {
    o->touched = true;
    o->check_mtime = false;
  }
  static void grow(object* o, int64_t end) {
    if (!o) return;
    changed(o);
    if (end > 0 && static_cast<uint64_t>(end) > o->size) o->size = static_cast<uint64_t>(end);
  }
  static void resize(object* o, uint64_t size) {
    if (!o) return;
    changed(o);
    o->size = size;
  }
  static void set_mode(object* o, uint32_t mode) {
    if (!o) return;
    o->touched = true;  // a mode change leaves mtime alone
    o->check_mode = true;
    o->mode = (o->mode & S_IFMT) | (mode & 07777);
  }
  static void set_mtime(object* o, int64_t mtime_ns) {
    if (!o) return;
    changed(o);
    if (mtime_ns == time_omit) return;
    o->check_mtime = mtime_ns != time_now;  // set explicitly: cp -a, rsync, tar keep mtimes
    o->mtime_ns = mtime_ns;
  }
  void set_owner(object* o, uint64_t aux) {
    if (!o) return;
    const uint32_t uid = static_cast<uint32_t>(aux >> 32), gid = static_cast<uint32_t>(aux);
    if (!o->check_owner && (uid == UINT32_MAX || gid == UINT32_MAX)) return;
    o->touched = true;
    o->check_owner = true;
    const auto [was_uid, was_gid] = owner(*o);
    const std::pair<uint32_t, uint32_t> now{uid != UINT32_MAX ? uid : was_uid,
                                            gid != UINT32_MAX ? gid : was_gid};
    const auto [at, added] = owner_ids_.try_emplace(now, static_cast<uint32_t>(owners_.size()));
    if (added) owners_.push_back(now);
    o->owner = at->second;
    // A chown clears a non-directory's set-uid bit, and its set-gid bit where that means
    // set-group-id rather than mandatory locking (group execute on), whoever calls it.
    if (!S_ISDIR(o->mode)) {
      o->mode &= ~uint32_t{S_ISUID};
      if (o->mode & S_IXGRP) o->mode &= ~uint32_t{S_ISGID};
    }
  }

  void note_removed(path_id id) {
    removed_.push_back(id);
    if (removed_.size() >= 2 * removed_unique_ + 4096) unique_removed();  // a name reused
  }
  void unique_removed() {
    std::sort(removed_.begin(), removed_.end());
    removed_.erase(std::unique(removed_.begin(), removed_.end()), removed_.end());
    removed_unique_ = removed_.size();
  }

  // Names of each object beneath the root, with a stack of its own: a trace may nest
  // thousands deep.
  // (An entry of the tree as found, unchanged, is not counted: linked again, each of its
  // names keeps the entry and is expected as found; a change through any of them makes the
  // one object they then share.)
  std::vector<uint32_t> count_names(const name_tree::index& ix) const {
    std::vector<uint32_t> names(objects_.size());
    std::vector<name_tree::id> todo = {name_tree::root};
    while (!todo.empty()) {
      const name_tree::id n = todo.back();
      todo.pop_back();
      if (const object_id o = resolved(tree_.value(n)); o != none) ++names[o];
      for (const name_tree::id k : ix.children(n)) todo.push_back(k);
    }
    return names;
  }
  bool same(ref a, ref b) const {
    return a == b || (resolved(a) != none && resolved(a) == resolved(b));
  }

  trace_reader& r_;
  fd_map fds_;
  std::optional<data_flow> flow_;  // with model_content::yes
  std::deque<object> objects_;
  std::vector<object_id> tree_obj_;  // by tree entry: its object, once it has one
  name_tree tree_;
  uint32_t next_group_ = 1;
  std::vector<object_id> files_;  // by file id: the object it is, or none
  // Paths removed or renamed away, which are expected absent unless there again at the end:
  // by id, each id once (a path the writer's table forgot may have two ids; the parts may
  // then both hold it, and comparer::finish() reports a difference once).
  // The owners chowns set, each pair once: owners_[0] is none.
  std::vector<std::pair<uint32_t, uint32_t>> owners_{{0, 0}};
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> owner_ids_;  // ordered: no hash to aim at
  std::vector<path_id> removed_;
  size_t removed_unique_ = 0;  // removed_ had no repeats at this size
};

end_state_model::end_state_model(trace_reader& trace, model_content content)
    : impl_(std::make_unique<impl>(trace, content)) {
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

result<expected_state> expected_end_state(trace_reader& trace, model_content content) {
  end_state_model m(trace, content);
  auto events = trace.events();
  event e;
  while (events.next(e)) m.apply(e);
  FSRR_TRY(events.status());
  return m.take();
}

result<void> check_end_state(trace_reader& trace, comparer& c, model_content content,
                             size_t batch) {
  end_state_model m(trace, content);
  {  // the stream's blocks (~20 MiB) let go of before the state is taken apart
    auto events = trace.events();
    event e;
    while (events.next(e)) m.apply(e);
    FSRR_TRY(events.status());
  }
  m.take(batch, [&](const expected_state& part) { c.check(part); });
  return {};
}

}  // namespace fsrr
