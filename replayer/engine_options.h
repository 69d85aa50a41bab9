// What the replay engine (engine.h) is asked: the user's choices (timing, strictness, which
// calls to issue, privileges) and what its backend adds (backend.h: peers, a common start).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "peers.h"
#include "privilege.h"
#include "schedule.h"

namespace fsrr {

struct engine_progress {
  uint64_t events_done = 0;   // handed to replay threads
  uint64_t events_total = 0;  // in the trace
  uint64_t elapsed_ns = 0;
  uint64_t eta_ns = 0;  // 0: unknown
};

struct engine_options {
  schedule_options timing;
  bool strict = false;            // stop at the first result that differs from the recording
  bool issue_all = false;         // issue calls whose recorded failure was environmental
  bool same_engines = true;       // io_uring and AIO requests through io_uring and AIO
  bool mmap_as_write = false;     // mapped stores as pwrite
  privilege_options privilege;    // owners, set-id bits, privileged xattrs (privilege.h)
  size_t listed_mismatches = 10;  // how many mismatches the report lists
  // afap: ops handed ahead to one replay thread before the dispatcher waits for it.
  size_t queue_depth = 4096;
  // Timed: ops are handed out this long before they are due (faithful), and at most this many
  // ahead to one replay thread (a memory bound: a thread far behind then holds the others up).
  uint64_t timed_lead_ns = 50'000'000;
  size_t timed_queue_limit = size_t{1} << 16;
  // Timed modes: the replay threads run SCHED_FIFO (the replay threads above the thread that
  // hands them their ops), so a due op is not held up behind other threads for a scheduler
  // slice. The caller checks it is allowed (realtime_allowed, schedule.h). Without it, timed
  // modes give the replay threads short scheduler slices (short_slice, schedule.h).
  bool realtime = false;
  // Timed modes, ordinary threads: the replay threads keep to CPUs of their own (cpu_spread.h).
  // Off where other processes replay beside this one on the same CPUs (MPI ranks sharing a
  // node): their threads' claims are not seen here.
  bool spread = true;
  // A single-thread trace: decode it on a helper thread, ahead of the replay, when the process
  // may use more than one CPU.
  bool decode_ahead = true;
  // Resolved trace paths are kept in generations of this many (op_dispatch.h's path_cache),
  // freed as the ops that use them finish: what bounds their memory.
  size_t path_generation = 16384;
  // Crash testing (lab/crashtest.h): every op also waits for every op of another thread that
  // had ended before it started in the recording, whatever it touched, so that an op after a
  // durability point in the recording is after it in the replay too.
  bool recorded_order = false;
  // Crash testing: which ops are crash points, given an op's seq and whether it promised
  // durability (model/durability.h) and returned; unset: exactly those that promised it.
  // Ops the replay models without a syscall (fd table, process structure) are never asked.
  std::function<bool(uint64_t seq, bool durable)> crash_point;
  // Crash testing: called on the replay thread right after a crash point's op returned, with
  // the op's seq, before any op ordered after it starts.
  std::function<void(uint64_t seq)> after_point;
  // Called from the calling thread a few times a second, e.g. for a progress line.
  std::function<void(const engine_progress&)> progress;
  // Set from elsewhere (a signal handler) to stop the replay; the report says "interrupted".
  const std::atomic<bool>* cancel = nullptr;
  // A replay shared with other processes (peers.h): the ops of threads it does not issue are
  // settled here too, for the fd tables, the data flow and the ordering, and not issued; it
  // starts at the instant they agree on. None: a replay of its own, starting at once.
  replay_peers* peers = nullptr;
  // How long before the agreed instant the engine stops sleeping and spins: a wake-up from a sleep
  // alone comes tens of microseconds late. 0 where processes outnumber CPUs: the spinning ones
  // would keep the others from starting at all.
  uint64_t start_spin_ns = 200'000;
};

}  // namespace fsrr
