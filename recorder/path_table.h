// Paths as the trace stores them (ids in the writer's path table), plus what the recorder
// needs on top: each id's parent and name, paths from in-kernel walks, and names a
// syscall got resolved against a directory the way the kernel resolved them. Every path
// belongs to a root (trace_root): it hangs below that root's top and is looked at the way
// the root's processes see it, beneath the root's directory.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "event.h"
#include "hash.h"
#include "name_arena.h"
#include "trace_writer.h"

namespace fsrr::recorder {

class path_table {
 public:
  explicit path_table(trace_writer& w);
  ~path_table();

  // A root's top (root_path, or trace_writer::root_top) and its directory, an O_PATH fd the
  // table does not own (-1: none; names are then taken as written).
  void add_top(path_id top, int root_fd);
  path_id top(path_id id) const { return id < nodes_.size() ? nodes_[id].top : root_path; }

  path_id child(path_id parent, std::string_view name);  // "." and ".." are taken lexically
  path_id parent(path_id id) const;                      // a top is its own parent
  std::string str(path_id id) const;                     // "/a/b", from its root
  std::string_view name(path_id id) const {
    return id < nodes_.size() ? names_.get(nodes_[id].name) : std::string_view();
  }

  size_t size() const { return nodes_.size() + walk_dirs_.size() + dirs_.size() + children_count_; }

  // A path from a BPF walk below `top`: components leaf first, each a length byte and the name.
  path_id from_walk(path_id top, std::span<const uint8_t> walk);
  // Lexical: "/a/./b/../c" -> /a/c, below `top`.
  path_id from_absolute(path_id top, std::string_view path);

  // Opens `p` as its root's processes would (openat2 RESOLVE_IN_ROOT beneath the root's
  // directory, O_CLOEXEC added): the fd, or -1 with errno set.
  int open(path_id p, int flags) const;

  // `name` as a syscall resolves it against directory `base` (ignored for absolute names):
  // symlinks among the leading components are followed (the final one never is), so the
  // result names the object the kernel reached. Unreadable components are taken lexically.
  path_id resolve(path_id base, std::string_view name);
  // Something changed which directories names lead to (rename, rmdir, a symlink replaced).
  void forget_resolutions() { dirs_.clear(); }

 private:
  // A path's name lives in an arena of chunks that never move: a node is 16 bytes, not 40,
  // and a big tree's table grows a chunk at a time rather than by doubling.
  struct node {
    path_id parent = no_id;
    path_id top = root_path;
    uint64_t name = 0;  // in names_
  };
  path_id note(path_id id, path_id parent, std::string_view name);
  node& at(path_id id);  // grown to hold it
  static uint64_t child_hash(path_id parent, std::string_view name) {
    return mix64(std::hash<std::string_view>()(name), parent);
  }
  path_id find_child(path_id parent, std::string_view name, uint64_t hash) const;
  void add_child(path_id id, uint64_t hash);
  path_id lexical(path_id base, std::string_view rel);
  path_id resolve_dir(path_id base, std::string_view dir);

  trace_writer& w_;
  std::deque<node> nodes_;
  name_arena names_;
  // (parent, name) -> the child's id, open addressing over ids (0: empty slot), the key
  // read from the node itself: most names are met many times, and the writer's own table
  // builds a string key for each lookup. 4 bytes a slot, at most half of them in use.
  std::vector<path_id> children_;
  size_t children_count_ = 0;
  std::unordered_map<std::string, path_id, string_hash, std::equal_to<>>  // no key built for a hit
      walk_dirs_;                                  // top + walk bytes of a directory
  std::string walk_key_;
  std::unordered_map<std::string, path_id> dirs_;  // base id + '/' + dir part -> id
  struct root_dir {
    int fd = -1;
    std::string seen_as;  // the directory's own path as /proc/self/fd shows it to fsrr
  };
  std::unordered_map<path_id, root_dir> roots_;  // by top
};

}  // namespace fsrr::recorder
