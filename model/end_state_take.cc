// The state the end-state model holds, taken out of it: the initial tree loaded, and the
// expected state, whole (result) or part by part as the model is taken apart (take).
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>

#include "end_state_core.h"

namespace fsrr {

void end_state_core::load_tree() {
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

expected_state end_state_core::result() {
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
void end_state_core::take(size_t batch, const std::function<void(expected_state&)>& each) {
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

end_state_core::object_id end_state_core::new_object(uint32_t type) {
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
end_state_core::object_id end_state_core::tree_object(size_t i) {
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

// What compare() checks of a name of object `id`, which has `count` names.
expected_entry end_state_core::entry_of(ref v, uint32_t count) {
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
void end_state_core::content_of(const object& o, expected_entry& x) {
  x.check_content = false;
  if (!flow_ || !o.file || flow_->size_of(o.file) != o.size) return;  // or a change missed
  source_list all;
  flow_->pieces_of(o.file, 0, o.size, all);
  x.content.assign(all.begin(), all.end());
  x.check_content = true;
}

// Names of each object beneath the root, with a stack of its own: a trace may nest
// thousands deep.
// (An entry of the tree as found, unchanged, is not counted: linked again, each of its
// names keeps the entry and is expected as found; a change through any of them makes the
// one object they then share.)
std::vector<uint32_t> end_state_core::count_names(const name_tree::index& ix) const {
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

}  // namespace fsrr
