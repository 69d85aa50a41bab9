// Which events a subset of a trace needs besides itself to replay on its own: what the
// chosen events use, made by events that were not chosen. Slice (--pid, --tid, --path) and
// minimize choose; this completes.
#pragma once

#include <cstdint>
#include <vector>

#include "event.h"
#include "trace_reader.h"

namespace fsrr::transform {

// `events` in trace order; `threads[t]` describes thread id t as fd_map needs it (its tid and
// fd table when the list starts). `chosen[i]`: event i is wanted. Returns, for each event,
// whether the subset keeps it: the chosen ones, and those of the others that
//  - made or changed a file or name a kept event uses (a directory on the way included),
//    going back as far as that takes;
//  - opened, or closed, an fd a kept event uses;
//  - are the exec or exit of a thread with kept events, or the clone that made it.
//  With `names_only` (minimize: a candidate must replay, the predicate judges its content),
//  only what made or changed a name counts in the first rule (creating opens, mkdir, rename,
//  link, unlink...), not what changed a file's data, size or attributes; and an fcntl that
//  leaves the fd table as it was (F_GETFL, F_SETFL) is not added for an fd's sake.
std::vector<bool> closure(trace_reader& trace, const std::vector<event>& events,
                          const std::vector<thread_info>& threads, const std::vector<bool>& chosen,
                          bool names_only = false);

}  // namespace fsrr::transform
