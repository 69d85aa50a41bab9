#include "expected.h"

#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>

namespace fsrr {

expected_entry expected_of(trace_reader& trace, size_t i) {
  const tree_entry& e = trace.tree()[i];
  expected_entry x;
  x.tree_index = i;
  x.mode = e.mode;
  x.size = e.size;
  x.check_size = S_ISREG(e.mode);
  if (S_ISLNK(e.mode)) x.target = trace.string(e.target);
  x.mtime_ns = e.mtime_ns;
  x.uid = e.uid;
  x.gid = e.gid;
  x.link_group = e.link_group;
  for (const auto& a : e.xattrs) x.xattrs.emplace_back(trace.string(a.name), a.size);
  std::sort(x.xattrs.begin(), x.xattrs.end());
  if (S_ISREG(e.mode)) {
    source_list all;
    tree_content(e).read(0, e.size, all);
    x.content.assign(all.begin(), all.end());
    x.check_content = true;
  }
  return x;
}

bool expected_in_tree(const tree_entry& e) {
  // never created by a replay: devices, and symlinks whose target the recording never read
  return !S_ISCHR(e.mode) && !S_ISBLK(e.mode) && !(S_ISLNK(e.mode) && e.target == no_id);
}

expected_state expected_from_tree(trace_reader& trace) {
  expected_state s;
  const auto& tree = trace.tree();
  // Every name of a hard-link group is the inode prepare made: its first entry in tree order.
  std::unordered_map<uint32_t, size_t> first;
  auto it = tree.begin();
  for (size_t i = 0; i < tree.size(); ++i, ++it) {
    const tree_entry e = *it;
    if (!expected_in_tree(e)) continue;
    const uint32_t group = e.link_group;
    const size_t from = group ? first.try_emplace(group, i).first->second : i;
    s[trace.placed_path(e.path)] = expected_of(trace, from);
  }
  return s;
}

}  // namespace fsrr
