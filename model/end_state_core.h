// The end-state model's machinery behind end_state_model (end_state.h), private to model/: its
// objects and names, the events applied to them (end_state.cc) and the state taken out of them
// (end_state_take.cc).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data_flow.h"
#include "expected.h"
#include "fd_map.h"
#include "name_tree.h"

namespace fsrr {
namespace end_state_detail {

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
  bool check_mode : 1 = true, check_size : 1 = true, check_mtime : 1 = true, check_owner : 1 = true,
                    check_xattrs : 1 = true;
  std::unique_ptr<extra> more;  // set: its target and xattrs (else the tree entry's, or none)
};
static_assert(sizeof(object) == 48);
using object_id = uint32_t;  // in impl::objects_

}  // namespace end_state_detail

class end_state_core {
 public:
  end_state_core(trace_reader& r, model_content content)
      : r_(r), fds_(threads(r)), tree_(0, [&r](name_tree::name_ref p) { return r.path(p).name; }) {
    if (content == model_content::yes) flow_.emplace(r);
    tree_.value(name_tree::root) = new_object(S_IFDIR);
    files_.assign(r.file_count() + 1, none);
  }

  void load_tree();

  void apply(const event& e);

  const fd_map& fds() const { return fds_; }

  expected_state result();

  // result(), taking the model apart as it goes: each object's strings are freed once its
  // last name is out, so the model and the state it becomes are never both whole. `each` gets
  // the state in parts of about `batch` entries: first the names removed, then the namespace
  // depth first.
  void take(size_t batch, const std::function<void(expected_state&)>& each);

 private:
  using extra = end_state_detail::extra;
  using object = end_state_detail::object;
  using object_id = end_state_detail::object_id;
  static constexpr uint32_t no_tree = end_state_detail::no_tree;
  static constexpr object_id none = UINT32_MAX;

  // The components of "/a/b/c", without copying them.
  template <typename F>
  static void for_components(std::string_view p, F&& each) {
    size_t pos = 1;
    while (pos < p.size()) {
      size_t end = p.find('/', pos);
      if (end == std::string_view::npos) end = p.size();
      if (end > pos) each(p.substr(pos, end - pos));
      pos = end + 1;
    }
  }

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

  object_id new_object(uint32_t type);
  // As tree()[i] describes it.
  object_id tree_object(size_t i);
  // Its owner: as a chown set it, or its tree entry's; 0 for an object of the workload's that
  // no chown set (not checked).
  std::pair<uint32_t, uint32_t> owner(const object& o) const {
    if (o.owner) return owners_[o.owner];
    if (o.tree == no_tree) return {0, 0};
    const tree_entry e = r_.tree()[o.tree];
    return {e.uid, e.gid};
  }
  // Its target and xattrs, to be changed: from its tree entry the first time.
  extra& more(object& o);

  // What compare() checks of a name of object `id`, which has `count` names.
  expected_entry entry_of(ref v, uint32_t count);
  // A changed file's bytes, as the data flow has them, if it agrees on the size.
  void content_of(const object& o, expected_entry& x);

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
  static std::pair<std::string, std::string> split(std::string_view p);
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
  void bind(file_id f, ref v);
  // The node at `p`, out of the namespace with all below it (to attach() or drop()).
  std::optional<name_tree::id> detach(const std::string& p);
  void attach(path_id id, std::optional<name_tree::id> t);
  void remove(path_id id) {
    const std::string p = path(id);
    if (const auto t = detach(p)) {
      tree_.drop(*t);
      note_removed(id);
    }
  }

  void open(const event& e);
  void rename(const event& e);
  void clone(const event& e);
  void allocate(const event& e);
  void xattr(const event& e);
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
  void set_owner(object* o, uint64_t aux);

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
  std::vector<uint32_t> count_names(const name_tree::index& ix) const;
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

}  // namespace fsrr
