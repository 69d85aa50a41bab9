// `fsrr record`: run (or attach to) a workload, capture its file-system syscalls with the
// BPF programs, and write the trace.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "result.h"

namespace fsrr::recorder {

struct record_options {
  std::string output = "fsrr.trace";
  std::vector<std::string> command;        // run this, held until the probes are attached
  std::vector<pid_t> pids;                 // and/or follow these running processes
  bool all = false;                        // every process but the recorder
  std::string cgroup;                      // every process of this cgroup (v2), now or later
  std::vector<std::string> paths;          // only events beneath these (at most 8) paths
  uint64_t duration_ns = 0;                // end the recording after this long; 0: never
  uint64_t max_bytes = 0;                  // end it once the trace is about this big; 0: never
  std::vector<std::string> snapshot_dirs;  // snapshotted whole before the workload runs
  uint64_t ring_bytes = 16ull << 20;       // rounded up to a power of two
  uint64_t queue_bytes = 64ull << 20;      // drained records waiting for the decoder, at most
  bool strict = false;                     // any lost event is a failure
  bool lossy = false;  // lose events rather than stop the workload while fsrr catches up
  bool overwrite = false;
  // The caller exits right after: what the recording built up to follow the workload (a
  // big copy's: tens of thousands of paths and inodes, ~10 ms to free) is left for the
  // process exit to reclaim. The trace is complete and closed either way.
  bool leave_for_exit = false;
  // Load the CO-RE build of the BPF programs even when the one compiled for this very kernel
  // fits (tests check that both record alike).
  bool portable_bpf = false;
  // The decoder works as SCHED_IDLE while it keeps up with the workload, which then has the
  // CPUs whenever it wants them (idle_decoder.h).
  bool idle_decoder = true;
  // Called once the workload runs (tests use it to interfere); may be empty.
  std::function<void()> on_started;
};

struct record_result;
// Called when the trace is finished, before record() waits for a command that outlives a
// recording cut short (duration_ns, max_bytes); exit_status is not known yet. May be empty.
using record_stopped = std::function<void(const record_result&)>;

struct record_result {
  int exit_status = 0;  // the command's (128 + signal if it was killed); 0 without one
  uint64_t events = 0;
  uint64_t lost = 0;
  uint64_t trace_bytes = 0;
  uint64_t duration_ns = 0;
  uint64_t unresolved = 0;    // fds or names whose path the recorder could not tell
  uint64_t compat = 0;        // 32-bit syscalls: counted, not decoded (the trace is incomplete)
  bool interrupted = false;   // stopped by SIGINT/SIGTERM
  bool cut_short = false;     // ended by duration_ns or max_bytes while the workload went on
  bool cut_by_duration = false;  // ... and it was duration_ns
  // Events left out at max_bytes although the workload had ended by then (fsrr was behind).
  bool size_reached = false;
  uint64_t filtered = 0;      // events outside `paths`, not stored...
  uint64_t filtered_in_kernel = 0;  // ... of which these were not even sent
  uint64_t peak_tracked = 0;  // most objects (tasks, inodes, fds, paths) held at once
  bool exact_bpf = false;     // the BPF build for this very kernel was loaded (not CO-RE)
  uint64_t peak_queued = 0;   // most drained bytes waiting for the decoder at once
  uint64_t peak_queue_memory = 0;  // ... and the most memory holding them (<= queue_bytes)
  uint64_t ring_wrapped = 0;  // records read across the ring buffer's end, in two pieces
  uint64_t decoder_idled = 0;   // times fsrr's decoder went SCHED_IDLE (idle_decoder.h)
  uint64_t decoder_raised = 0;  // ... and was raised back, late for its beat or behind
  uint64_t cpu_ns = 0;        // CPU time fsrr itself used (its threads; the programs run in the
                              // workload's and are its own)
  uint64_t pauses = 0;        // processes stopped until fsrr caught up (not with lossy)
  uint64_t paused_ns = 0;     // wall time during which some were stopped
};

// An error for what prevents recording (no BTF, not root, output exists, ...): status 126 or
// 127 if the command cannot be run or is not found, else 0. The trace file is removed if the
// recording could not start; one that started keeps what it wrote. An error also when --strict
// and events were lost (the trace is finished then, on_stopped has been called).
result<record_result> record(const record_options& options, const record_stopped& on_stopped = {});

// Parses "64M", "512K", "1G", "4096" into bytes; 0 if malformed.
uint64_t parse_size(const std::string& s);

}  // namespace fsrr::recorder
