#include "tree_table.h"

namespace fsrr {

tree_entry tree_table::operator[](size_t i) const {
  const packed& p = entries_[i];
  tree_entry e;
  e.path = p.path;
  e.mode = p.mode;
  e.uid = p.uid;
  e.gid = p.gid;
  e.size = p.size;
  e.allocated = p.allocated;
  e.atime_ns = p.atime_ns;
  e.mtime_ns = p.mtime_ns;
  e.ctime_ns = p.ctime_ns;
  e.nlink = p.nlink;
  e.link_group = p.link_group;
  e.target = p.target;
  e.file = p.file;
  if (p.more) {
    const rare& r = more_[p.more - 1];
    e.xattrs = r.xattrs;
    e.extents = r.extents;
  }
  return e;
}

void tree_table::push_back(const tree_entry& e) {
  uint32_t more = 0;
  if (!e.xattrs.empty() || !e.extents.empty()) {
    more_.push_back({e.xattrs, e.extents});
    more = static_cast<uint32_t>(more_.size());
  }
  entries_.push_back({e.path, e.mode, e.uid, e.gid, e.size, e.allocated, e.atime_ns, e.mtime_ns,
                      e.ctime_ns, e.nlink, e.link_group, e.target, e.file, more});
}

}  // namespace fsrr
