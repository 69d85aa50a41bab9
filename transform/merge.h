// merge: traces recorded at the same time on several hosts (or by several `fsrr record` runs on
// one) become one trace, as if one recorder had seen them all.
//
// - Hosts. Each input is a host of the output (header_info::hosts, in input order; an input
//   that is itself merged brings its hosts along): its threads and files carry their host's
//   index, so that pids, tids, fd tables, devices and inodes that two hosts both use stay apart.
// - One clock. An input's trace time t is put at its realtime, by the median difference of its
//   clock calibration pairs (the header's and those the recorder wrote as it went), so that the
//   output's time 0 is the earliest input's start.
// - One namespace. Paths stay as recorded: /a/b of two hosts is one path (a shared mount), and
//   the initial trees are united on the merged clock: a path two inputs found already there is
//   one entry, the one the earlier user of it saw, and one file (their file ids are joined);
//   a path that one input creates and another finds already there later is that file, not an
//   entry of the initial tree. Two different states of one path that nothing in the inputs
//   explains (a file and a directory; two sizes no write made) are an error naming the path.
// - Refused: a trace given twice (the same trace id: host names repeat, ids do not), traces
//   anonymized with different keys (they name paths differently), fewer than two traces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clock_line.h"
#include "trace_reader.h"

namespace fsrr::transform {

struct merge_options {
  bool force = false;  // overwrite the output file
};

struct merge_result {
  uint64_t events = 0;
  uint64_t tree = 0;      // entries of the output's initial tree
  uint64_t joined = 0;    // entries two or more inputs had: one entry, one file
  uint64_t created = 0;   // entries an input had that another input creates: left to its events
  uint64_t differing_system = 0;  // /usr, /etc... entries the hosts saw differently: the first's
  size_t hosts = 0;
  std::vector<uint64_t> offsets_ns;  // by input: where its time 0 falls on the output's clock
};

// `names` name the inputs in errors (their file names).
result<merge_result> merge(const std::vector<trace_reader*>& inputs,
                           const std::vector<std::string>& names, const std::string& out,
                           const merge_options& o);


}  // namespace fsrr::transform
