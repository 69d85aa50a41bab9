// The event replay engine: one replay thread per recorded thread, fed in trace order by the
// calling thread (the dispatcher), which settles fd tables, paths and cross-thread ordering
// before it hands an op out. A trace of a single thread is replayed inline, without queues
// or ordering, while a helper thread decodes ahead. See op_dispatch.h for how each op is
// issued.
#pragma once

#include "data_source.h"
#include "engine_options.h"
#include "report.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

// Replays the trace's events on `target` (the initial tree is already prepared). A stop
// (--strict, ENOSPC or EIO on the target, a damaged trace block, cancel) ends the replay
// cleanly: the returned stats cover what ran and `stopped` says why; exit non-zero then.
replay_stats replay_events(trace_reader& trace, const target_root& target, const data_source& data,
                           const engine_options& options);

}  // namespace fsrr
