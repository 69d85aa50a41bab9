#include "path_split.h"

namespace fsrr::transform::merge_detail {

prefix_tree::prefix_tree(const std::vector<std::string>& prefixes)
    : nodes_(1), count_(prefixes.size()) {
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const std::string& p = prefixes[i];
    uint32_t at = 0;
    for (size_t pos = 1; pos < p.size();) {
      size_t end = p.find('/', pos);
      if (end == std::string::npos) end = p.size();
      if (end > pos) {
        const std::string name = p.substr(pos, end - pos);
        auto it = nodes_[at].children.find(name);
        if (it == nodes_[at].children.end()) {
          nodes_.emplace_back();
          it = nodes_[at].children.emplace(name, static_cast<uint32_t>(nodes_.size() - 1)).first;
        }
        at = it->second;
      }
      pos = end + 1;
    }
    if (nodes_[at].ends < 0) nodes_[at].ends = static_cast<int>(i);
  }
}

uint32_t prefix_tree::child(uint32_t node, std::string_view name) const {
  const auto& children = nodes_[node].children;
  const auto it = children.find(std::string(name));
  return it == children.end() ? none : it->second;
}

bool path_split::local(path_id p) {
  if (p == no_id || p >= state_.size()) return false;
  if (state_[p] == unknown) {
    std::vector<path_id> chain;
    for (path_id q = p; q != no_id && q < state_.size() && state_[q] == unknown;
         q = r_.path(q).parent)
      chain.push_back(q);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const path_entry e = r_.path(*it);
      uint32_t s = united;
      if (e.parent == no_id) {
        s = *it == root_path ? way : united;  // "/" is on the way to every prefix
      } else if (e.parent < state_.size()) {
        const uint32_t up = state_[e.parent];
        if (up == own || up == united) {
          s = up;
        } else if (up >= way) {
          const uint32_t k = tree_.child(up - way, e.name);
          s = k == prefix_tree::none ? own : tree_.ends(k) ? united : way + k;
          if (k != prefix_tree::none && tree_.ends(k)) met_[static_cast<size_t>(tree_.prefix_at(k))] = true;
        }
      }
      state_[*it] = s;
    }
  }
  return state_[p] == own;
}

}  // namespace fsrr::transform::merge_detail
