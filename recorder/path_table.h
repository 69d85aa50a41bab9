// Paths as the trace stores them (ids in the writer's path table), plus what the recorder
// needs on top: each id's parent and name, paths from in-kernel walks, and names a
// syscall got resolved against a directory the way the kernel resolved them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "event.h"
#include "trace_writer.h"

namespace fsrr::recorder {

class path_table {
 public:
  explicit path_table(trace_writer& w);

  path_id child(path_id parent, std::string_view name);  // "." and ".." are taken lexically
  path_id parent(path_id id) const;
  std::string str(path_id id) const;  // "/a/b"
  std::string_view name(path_id id) const {
    return id < nodes_.size() ? std::string_view(nodes_[id].name) : std::string_view();
  }

  size_t size() const {
    return nodes_.size() + walk_dirs_.size() + dirs_.size() + children_.size();
  }

  // A path from a BPF walk: components leaf first, each a length byte and the name.
  path_id from_walk(std::span<const uint8_t> walk);
  // Lexical: "/a/./b/../c" -> /a/c.
  path_id from_absolute(std::string_view path);

  // `name` as a syscall resolves it against directory `base` (ignored for absolute names):
  // symlinks among the leading components are followed (the final one never is), so the
  // result names the object the kernel reached. Unreadable components are taken lexically.
  path_id resolve(path_id base, std::string_view name);
  // Something changed which directories names lead to (rename, rmdir, a symlink replaced).
  void forget_resolutions() { dirs_.clear(); }

 private:
  struct node {
    path_id parent = no_id;
    std::string name;
  };
  path_id note(path_id id, path_id parent, std::string_view name);
  path_id lexical(path_id base, std::string_view rel);
  path_id resolve_dir(path_id base, std::string_view dir);

  // Looked up by string_view: no key is built for a hit.
  struct key_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  trace_writer& w_;
  std::vector<node> nodes_;
  // A hash of (parent, name) -> the child's id, confirmed against the node: most names are
  // met many times, and the writer's own table builds a string key for each lookup.
  std::unordered_map<uint64_t, path_id> children_;
  std::unordered_map<std::string, path_id, key_hash, std::equal_to<>>
      walk_dirs_;                                  // walk bytes of a directory
  std::unordered_map<std::string, path_id> dirs_;  // base id + '/' + dir part -> id
};

}  // namespace fsrr::recorder
