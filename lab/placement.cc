#include "placement.h"

#include "target.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <vector>

namespace fsrr::lab {
namespace {

constexpr size_t max_listed = 64;  // prefixes kept at most; more, and everything is on test

// Whether the event changes what its path names (or the file behind it).
bool writes_path(const event& e) {
  switch (info(e.kind).cls) {
    case op_class::open:
      return e.kind == op::creat || (e.flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC));
    case op_class::name:
    case op_class::attr:
      return true;
    case op_class::resize:
      return e.kind == op::truncate;
    case op_class::xattr: {
      const op k = e.kind;
      return k == op::setxattr || k == op::lsetxattr || k == op::removexattr ||
             k == op::lremovexattr || k == op::setxattrat || k == op::removexattrat;
    }
    default:
      return false;
  }
}

}  // namespace

result<placement> decide_placement(trace_reader& trace) {
  const size_t n = trace.path_count() + 1;
  std::vector<uint8_t> written(n, 0), dirty(n, 0);  // dirty: written, or above something written
  const auto mark = [&](path_id p) {
    if (p == no_id || p >= n) return;
    written[p] = 1;
    for (path_id q = p; q < n && !dirty[q]; q = trace.path(q).parent) {
      dirty[q] = 1;
      if (trace.path(q).parent == no_id) break;
    }
  };
  auto events = trace.events();
  bool any = false;
  for (event e; events.next(e);) {
    if (!writes_path(e)) continue;
    any = true;
    mark(e.path);
    if (info(e.kind).fields & F_PATH2) mark(e.path2);
  }
  FSRR_TRY(events.status());
  placement out;
  if (!any) return out;
  for (const tree_entry& t : trace.tree()) {
    if (!S_ISDIR(t.mode) || t.path >= n || dirty[t.path]) continue;
    const path_id up = trace.path(t.path).parent;
    if (up == no_id || up >= n || !dirty[up]) continue;
    std::string placed = trace.placed_path(t.path);
    // only a plain path can be mapped elsewhere (a hostile trace may name "/../etc")
    if (plain_path(placed)) out.on_source.push_back(std::move(placed));
  }
  // written subtrees' tops: written paths whose parent is not written
  for (path_id p = 1; p < n && out.on_test.size() < max_listed; ++p) {
    const path_id up = trace.path(p).parent;
    if (written[p] && (up == no_id || !written[up])) out.on_test.push_back(trace.placed_path(p));
  }
  std::sort(out.on_source.begin(), out.on_source.end());
  if (out.on_source.size() > max_listed) out.on_source.clear();
  return out;
}

}  // namespace fsrr::lab
