// What the dispatcher hands a replay thread: one event, settled — its effect on the fd tables,
// its paths resolved, where a write's bytes come from.
#pragma once

#include <cstdint>
#include <string>

#include "data_flow.h"
#include "event.h"
#include "fd_map.h"

namespace fsrr {

struct resolved_path;  // op_dispatch.h

// Four cache lines: a replay thread reads thousands of these in a row, written by another CPU.
struct alignas(64) work_item {
  event ev;
  uint64_t seq = 0;  // position in the trace's time order
  fd_effect fx;
  const resolved_path* p1 = nullptr;
  const resolved_path* p2 = nullptr;
  const std::string* text = nullptr;  // symlink target or xattr name
  uint32_t ftype = 0;                 // S_IFMT of ev.file, 0 if unknown
  bool dir_change = false;            // may move or remove a directory, or a symlink
  bool end = false;                   // no more work for this thread
  bool spliced = false;  // a splice's file side, as the read or write it did (counted as splice)
  source_list sources;                // a write's bytes (data_flow.h); empty: fresh ones
};

}  // namespace fsrr
