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
// - Hosts' own paths (merge_options::shared): given the shared file system's mount points,
//   every other path outside the system directories (/tmp, /home, /var/log...) is its host's
//   own: it goes to a root of the output made for that host (`where` "host:NAME"), so two
//   hosts' /tmp/x are two files. Without them every path is united, and the result counts
//   the files outside the system directories several hosts name, so the user knows to choose.
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
  // The shared file system's mount points (absolute, not "/"): paths beneath them, beneath
  // the system directories and on the way to either are united across hosts; every other path
  // is its host's own, in a root of the output made for it (replayed under TARGET/hosts/NAME).
  // None: every path is united.
  std::vector<std::string> shared;
};

struct merge_result {
  uint64_t events = 0;
  uint64_t tree = 0;      // entries of the output's initial tree
  uint64_t joined = 0;    // entries two or more inputs had: one entry, one file
  uint64_t created = 0;   // entries an input had that another input creates: left to its events
  uint64_t differing_system = 0;  // /usr, /etc... entries the hosts saw differently: the first's
  // Regular files and symlinks outside the system directories that several inputs name, their
  // tree or their creates: one file for all of them (none with `shared`: each host's own).
  uint64_t united = 0;
  std::vector<std::string> host_dirs;  // with `shared`: by host, its directory beneath hosts/
  std::vector<std::string> shared_unmet;  // `shared` prefixes beneath which no trace has a path
  size_t hosts = 0;
  std::vector<uint64_t> offsets_ns;  // by input: where its time 0 falls on the output's clock
};

// `names` name the inputs in errors (their file names).
result<merge_result> merge(const std::vector<trace_reader*>& inputs,
                           const std::vector<std::string>& names, const std::string& out,
                           const merge_options& o);


}  // namespace fsrr::transform
