#include "path_table.h"

#include <climits>
#include <cstdlib>

namespace fsrr::recorder {

path_table::path_table(trace_writer& w) : w_(w) {
  nodes_.resize(64);
}

path_id path_table::note(path_id id, path_id parent, std::string_view name) {
  if (id >= nodes_.size()) nodes_.resize(std::max<size_t>(id + 1, nodes_.size() * 2));
  node& n = nodes_[id];
  if (n.parent == no_id && id != root_path) {
    n.parent = parent;
    n.name.assign(name);
  }
  return id;
}

path_id path_table::child(path_id parent, std::string_view name) {
  if (name.empty() || name == ".") return parent;
  if (name == "..") return this->parent(parent);
  const uint64_t key = std::hash<std::string_view>()(name) * 0x9E3779B97F4A7C15ull ^ parent;
  if (const auto it = children_.find(key); it != children_.end()) {
    const node& n = nodes_[it->second];
    if (n.parent == parent && n.name == name) return it->second;
  }
  const path_id id = note(w_.intern_child(parent, name), parent, name);
  children_[key] = id;
  return id;
}

path_id path_table::parent(path_id id) const {
  if (id == root_path || id >= nodes_.size() || nodes_[id].parent == no_id) return root_path;
  return nodes_[id].parent;
}

std::string path_table::str(path_id id) const {
  if (id == no_id) return {};
  std::vector<const std::string*> names;
  for (path_id p = id; p != root_path && p < nodes_.size() && nodes_[p].parent != no_id;
       p = nodes_[p].parent)
    names.push_back(&nodes_[p].name);
  if (names.empty()) return "/";
  std::string s;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    s += '/';
    s += **it;
  }
  return s;
}

path_id path_table::from_walk(std::span<const uint8_t> walk) {
  if (walk.empty()) return root_path;
  const size_t leaf_len = walk[0];
  if (1 + leaf_len > walk.size()) return no_id;
  const std::string_view leaf(reinterpret_cast<const char*>(walk.data()) + 1, leaf_len);
  const std::span<const uint8_t> up = walk.subspan(1 + leaf_len);
  // Most walks differ only in their leaf: remember directories by their walk bytes.
  const std::string_view key(reinterpret_cast<const char*>(up.data()), up.size());
  auto it = walk_dirs_.find(key);
  if (it == walk_dirs_.end()) {
    it = walk_dirs_.emplace(std::string(key), no_id).first;
    std::vector<std::string_view> parts;
    for (size_t at = 0; at < up.size();) {
      const size_t len = up[at];
      if (at + 1 + len > up.size()) break;
      parts.emplace_back(reinterpret_cast<const char*>(up.data()) + at + 1, len);
      at += 1 + len;
    }
    path_id dir = root_path;
    for (auto p = parts.rbegin(); p != parts.rend(); ++p) dir = child(dir, *p);
    it->second = dir;
  }
  return child(it->second, leaf);
}

path_id path_table::lexical(path_id base, std::string_view rel) {
  path_id id = base;
  size_t pos = 0;
  while (pos <= rel.size()) {
    size_t slash = rel.find('/', pos);
    if (slash == std::string_view::npos) slash = rel.size();
    id = child(id, rel.substr(pos, slash - pos));
    pos = slash + 1;
  }
  return id;
}

path_id path_table::from_absolute(std::string_view path) {
  return lexical(root_path, path);
}

path_id path_table::resolve_dir(path_id base, std::string_view dir) {
  std::string key = std::to_string(base);
  key += '/';
  key += dir;
  if (auto it = dirs_.find(key); it != dirs_.end()) return it->second;
  std::string full = dir.front() == '/' ? std::string(dir) : str(base) + "/" + std::string(dir);
  char real[PATH_MAX];
  if (!::realpath(full.c_str(), real)) return lexical(base, dir);  // not there (yet): as written
  const path_id id = from_absolute(real);
  dirs_.emplace(std::move(key), id);
  return id;
}

path_id path_table::resolve(path_id base, std::string_view name) {
  if (name.empty()) return base;
  if (name.front() == '/') base = root_path;
  while (name.size() > 1 && name.back() == '/') name.remove_suffix(1);
  const size_t slash = name.rfind('/');
  if (slash == std::string_view::npos) return child(base, name);
  const std::string_view dir = name.substr(0, slash);
  const std::string_view leaf = name.substr(slash + 1);
  const path_id d = dir.empty() ? root_path : resolve_dir(base, dir);
  return child(d, leaf);
}

}  // namespace fsrr::recorder
