// slice: a part of a trace that replays on its own.
//
// The part: the events from --from to --to (seconds of trace time, as dump shows them), of
// the --pid and --tid threads, on paths beneath --path. Its initial tree is the state at its
// start — the initial tree with every earlier event applied (created, renamed, resized,
// removed) — and the files open then are opened at the start (fd_bind events, as for files a
// recording finds open). Choosing threads or paths keeps what the chosen events need from the
// others too (closure.h): the directory another process made, the file it wrote.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace_reader.h"

namespace fsrr::transform {

// A process or thread as reports name it: PID, or HOST:PID in a merged trace (pids repeat
// across hosts).
struct thread_pick {
  std::string host;  // "" : any host, if only one has it
  int32_t id = 0;
  std::string text() const;
};
result<thread_pick> parse_thread_pick(std::string_view text, std::string_view option);

struct slice_options {
  std::optional<double> from, to;  // seconds of trace time
  std::vector<thread_pick> pids, tids;  // as the trace shows them (dump's [tid], info's pids)
  std::vector<std::string> paths;   // prefixes of placed paths
  bool force = false;
};

struct slice_result {
  uint64_t events = 0;  // in the slice, fd_binds at its start included
  uint64_t chosen = 0;  // of which chosen by the options (the rest: what those need)
  uint64_t tree = 0;    // entries of its initial tree
  uint64_t bound = 0;   // fds open at its start
};

result<slice_result> slice(trace_reader& in, const std::string& out, const slice_options& o);

}  // namespace fsrr::transform
