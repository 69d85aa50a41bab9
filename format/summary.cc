#include "summary.h"

#include <sys/stat.h>

namespace fsrr {

void tree_totals::add(const tree_entry& e) {
  switch (e.mode & S_IFMT) {
    case S_IFREG:
      ++files;
      bytes += e.size;
      break;
    case S_IFDIR:
      ++dirs;
      break;
    case S_IFLNK:
      ++symlinks;
      break;
    default:
      ++other;
  }
}

void trace_summary::add(const event& e) {
  if (events == 0 || e.ts < first_ts) first_ts = e.ts;
  if (e.ts + e.dur > last_ts) last_ts = e.ts + e.dur;
  ++events;
  ++op_counts[static_cast<size_t>(e.kind)];
  if (e.result <= 0) return;
  switch (info(e.kind).cls) {
    case op_class::read:
      bytes_read += static_cast<uint64_t>(e.result);
      break;
    case op_class::write:
      bytes_written += static_cast<uint64_t>(e.result);
      break;
    case op_class::copy:  // a splice's pipe side (no file) neither reads nor writes a file
      if (e.kind != op::splice || e.file != no_id) bytes_read += static_cast<uint64_t>(e.result);
      if (e.kind != op::splice || e.file2 != no_id)
        bytes_written += static_cast<uint64_t>(e.result);
      break;
    default:
      break;
  }
}

std::string_view name(fd_kind k) {
  switch (k) {
    case fd_kind::pipe: return "pipe";
    case fd_kind::socket: return "socket";
    case fd_kind::tty: return "tty";
    case fd_kind::other: return "other";
    case fd_kind::count: break;
  }
  return "?";
}

}  // namespace fsrr
