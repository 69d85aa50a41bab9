// The event replay engine: one replay thread per recorded thread, fed in trace order by the
// calling thread (the dispatcher), which settles fd tables, paths and cross-thread ordering
// before it hands an op out. A trace of a single thread is replayed inline, without queues
// or ordering, while a helper thread decodes ahead. See op_dispatch.h for how each op is
// issued.
#pragma once

#include <cstdint>
#include <string_view>

#include "data_source.h"
#include "engine_options.h"
#include "report.h"
#include "target.h"
#include "trace_reader.h"

namespace fsrr {

// How the ops reach the kernel in this process (the local backends of backend.h):
// - inline: one recorded thread (issued here), its ops settled and issued on the calling
//   thread;
// - settled_ahead: the same, with a helper thread settling them a batch ahead, where the
//   process may use a second CPU (engine_options::decode_ahead);
// - lanes: one replay thread per recorded thread, fed in trace order by the calling thread,
//   which settles fd tables, paths and cross-thread ordering first (and, in a shared replay,
//   the ops of the threads other processes issue).
enum class replay_loop : uint8_t { inline_single, settled_ahead, lanes };
std::string_view name(replay_loop loop);  // "inline", "settled-ahead", "lanes"

// The loop for this trace and these options: a single thread this process issues runs inline
// (settled ahead where a second CPU allows), everything else in lanes.
replay_loop choose_loop(const trace_reader& trace, const engine_options& options);

// Replays the trace's events on `target` (the initial tree is already prepared) through
// `loop`. A stop (--strict, ENOSPC or EIO on the target, a damaged trace block, cancel) ends
// the replay cleanly: the returned stats cover what ran and `stopped` says why; exit non-zero
// then.
replay_stats replay_events(trace_reader& trace, const target_root& target, const data_source& data,
                           const engine_options& options, replay_loop loop);
// The same through the loop choose_loop picks.
replay_stats replay_events(trace_reader& trace, const target_root& target, const data_source& data,
                           const engine_options& options);

}  // namespace fsrr
