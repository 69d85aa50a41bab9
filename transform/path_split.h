// merge --shared: which paths of an input are united across hosts — those beneath a shared
// prefix (the shared file system's mount point) or a system directory, and the directories on
// the way to one — and which are its host's own (the rest: /tmp, /home, /var/log...). Private
// to transform/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace_reader.h"

namespace fsrr::transform::merge_detail {

// The prefixes' components as a tree: "/mnt/shared" and "/mnt/lab" make mnt -> {shared, lab}.
class prefix_tree {
 public:
  // Absolute paths of plain components, "/" not among them (merge checks).
  explicit prefix_tree(const std::vector<std::string>& prefixes);
  static constexpr uint32_t none = UINT32_MAX;
  uint32_t child(uint32_t node, std::string_view name) const;
  bool ends(uint32_t node) const { return nodes_[node].ends >= 0; }
  // The index in `prefixes` of the prefix that ends at `node` (the first, if given twice).
  int prefix_at(uint32_t node) const { return nodes_[node].ends; }
  size_t prefixes() const { return count_; }

 private:
  struct node {
    std::unordered_map<std::string, uint32_t> children;
    int ends = -1;  // the prefix that ends here (everything beneath is united), or -1
  };
  std::vector<node> nodes_;
  size_t count_ = 0;
};

// Each path of one input, classified once (iteratively: no recursion, whatever the depth).
class path_split {
 public:
  path_split(trace_reader& r, const prefix_tree& tree)
      : r_(r), tree_(tree), state_(r.path_count() + 1, unknown), met_(tree.prefixes(), false) {}
  // A path of the first root that is neither beneath a prefix nor on the way to one. Paths of
  // another root (a chroot's, a container's) are a root of their own already: never local.
  bool local(path_id p);
  // By prefix index: whether a path classified so far lies beneath (or is) that prefix.
  const std::vector<bool>& prefixes_met() const { return met_; }
  // A path of the first root on the way to a prefix ("/mnt" for /mnt/lustre), "/" among them.
  bool on_the_way(path_id p) {
    local(p);
    return p != no_id && p < state_.size() && state_[p] >= way;
  }

 private:
  enum : uint32_t { unknown = 0, united = 1, own = 2, way = 3 };  // way + node on the way
  trace_reader& r_;
  prefix_tree tree_;  // a few prefixes: each input its copy
  std::vector<uint32_t> state_;
  std::vector<bool> met_;
};

}  // namespace fsrr::transform::merge_detail
