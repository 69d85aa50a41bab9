// Which MPI rank replays which recorded threads, and which files and paths the threads of more
// than one rank touch. Every rank works the plan out from the trace alone, in two passes over
// its events, and gets the same one.
//
// The unit handed out is a group of processes: a process with every process it shares an open
// file description with (a child using or closing an fd its parent opened, threads of one fd
// table). An open file description is one object with one position; it cannot be split across
// ranks, which may run on different hosts, and opening the path again on another rank would
// find another file once it was renamed or unlinked. Whole recorded hosts are shared out first,
// then groups, balanced by event count: largest first onto the least-loaded rank.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "event.h"
#include "result.h"
#include "trace_reader.h"

namespace fsrr::mpi {

// The recorded host a thread ran on: its index in a merged trace's hosts (fsrr merge), 0 in a
// trace of one host.
inline uint16_t host_of(const thread_info& t) {
  return t.host;
}

struct rank_share {
  uint64_t events = 0;  // the trace's events of its threads
  uint32_t threads = 0;
  uint32_t processes = 0;
  uint32_t groups = 0;
  std::vector<uint16_t> hosts;  // recorded hosts it replays (some of)
};

class rank_plan {
 public:
  static result<rank_plan> make(trace_reader& trace, int ranks);

  int ranks() const { return static_cast<int>(shares_.size()); }
  // -1 for an id the trace does not know.
  int rank_of(thread_id t) const { return t < rank_of_.size() ? rank_of_[t] : -1; }
  const rank_share& share(int rank) const { return shares_[static_cast<size_t>(rank)]; }
  // Processes kept on another's rank because they share open files with it.
  uint32_t processes_kept_together() const { return kept_together_; }

  // The plan as bytes, for rank 0 to hand the others (who then need not read the trace's
  // events twice to work it out), and back; a plan whose sizes do not fit `trace` is refused.
  std::vector<uint8_t> to_bytes(trace_reader& trace) const;
  static result<rank_plan> from_bytes(std::span<const uint8_t> bytes, trace_reader& trace,
                                      int ranks);

  // Ordering keys (replayer/ordering.h): the ranks other than `self` whose threads touch one of
  // them, as bits r % 64; and whether a thread of `self` touches this one.
  uint64_t watchers(std::span<const uint64_t> keys, int self) const;
  bool touched_by(uint64_t key, int self) const;
  // Ranks (bits r % 64) whose threads touch a file or a path; for tests.
  uint64_t file_ranks(file_id f) const { return f < file_ranks_.size() ? file_ranks_[f] : 0; }
  uint64_t path_ranks(path_id p) const { return p < path_ranks_.size() ? path_ranks_[p] : 0; }

 private:
  result<void> mark_keys(trace_reader& trace, const std::vector<thread_info>& threads);
  uint64_t ranks_of_key(uint64_t key) const;
  std::vector<int32_t> rank_of_;  // by thread id
  std::vector<rank_share> shares_;
  std::vector<uint64_t> file_ranks_, path_ranks_;
  uint32_t kept_together_ = 0;
};

}  // namespace fsrr::mpi
