// Trace-wide totals: kept by the writer and stored in the footer; recomputed by the reader
// from the blocks when the footer is missing (a killed recorder).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>

#include "event.h"

namespace fsrr {

struct tree_totals {
  uint64_t files = 0;  // regular files
  uint64_t dirs = 0;
  uint64_t symlinks = 0;
  uint64_t other = 0;  // fifos, devices, sockets
  uint64_t bytes = 0;  // sum of regular file sizes
  void add(const tree_entry& e);
};

struct trace_summary {
  uint64_t events = 0;
  uint64_t lost_events = 0;
  uint64_t first_ts = 0;  // earliest entry
  uint64_t last_ts = 0;   // latest exit
  std::array<uint64_t, op_count> op_counts{};
  uint64_t unknown_ops = 0;  // op codes this reader does not know (newer writer)
  uint64_t paths = 0, strings = 0, files = 0, threads = 0, processes = 0;
  uint64_t roots = 0;  // root directories the processes had (0 in older traces: one)
  uint64_t bytes_read = 0;     // successful read-class results, plus bytes copied in-kernel
  uint64_t bytes_written = 0;  // successful write-class results, plus bytes copied in-kernel
  uint64_t incomplete = 0;     // incomplete_bit flags
  uint64_t pauses = 0;         // times the recorder stopped the workload to catch up
  uint64_t paused_ns = 0;      // wall time the workload spent stopped
  uint64_t filtered = 0;       // events outside the --path directories, not stored
  tree_totals tree;
  std::map<std::pair<op, fd_kind>, uint64_t> nonfile;  // ops on pipes, sockets, ttys

  uint64_t duration_ns() const { return events ? last_ts - first_ts : 0; }
  void add(const event& e);  // counts, bytes, time range
};

}  // namespace fsrr
