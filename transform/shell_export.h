// export --shell: a trace as a bash script that re-issues its ops with coreutils, for a bug
// report that runs anywhere: `bash repro.sh TARGET` builds the initial tree beneath TARGET, then
// issues each op in trace order, one thread after another, each line preceded by the recorded
// op as `fsrr dump` prints it.
//
// Open file descriptions stay open file descriptions: an open becomes `exec N<>PATH` in the
// script's own shell, so reads and writes at the fd's position (`head -c SIZE /dev/urandom >&N`)
// share and move it as the program's did; ops at an offset, syncs, truncates and allocations go
// through /proc/self/fd/N, which names the same file even after it was renamed or removed.
// Data is random, as replay's default. Ops a script cannot express (xattrs, times, owners,
// io_uring's linked requests...) and ops that failed in the recording stay as comments.
//
// A trace is untrusted: the script names only paths beneath "$T", every component checked
// (no "", ".", ".." or "/" in a name); an op whose path passes through a symlink (of the tree
// or made by the ops: a script cannot confine what it follows) is left as a comment saying so.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "event.h"
#include "trace_reader.h"

namespace fsrr::transform {

struct shell_export_result {
  uint64_t tree_entries = 0;  // made by the script
  uint64_t ops = 0;           // issued by it
  uint64_t comments = 0;      // left as comments: not expressible, failed, or unsafe
  uint64_t unsafe = 0;        // of those, through a symlink or a bad name
};

// Writes the script to `path` (refused if it exists), mode 0755. `describe` gives an event's
// line as dump prints it. Each op's comment starts with its seq (every event but pipe and
// socket ones counts one, from 0: replay's and crashtest's numbering). With `crash_after`, the
// script stops right after that op: it runs $CRASH there (by default `xfs_io -x -c shutdown`
// on TARGET: the file system stops without writing what is not on stable storage yet), so a
// crashtest finding is a script an FS developer runs with a power cut of their own.
result<shell_export_result> export_shell(trace_reader& in, const std::string& path,
                                         const std::function<std::string(const event&)>& describe,
                                         std::optional<uint64_t> crash_after = std::nullopt);

}  // namespace fsrr::transform
