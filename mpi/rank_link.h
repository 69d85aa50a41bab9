// The ranks' link during the replay (replay_peers for replayer/engine.h): one thread per rank
// carries the progress of its lanes to the ranks that wait on them, advances the remote lanes'
// counters from what the others say, passes a stop on in both directions, and ends once every
// rank has said it is done. The only MPI calls while the replay runs are this thread's.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "op_dispatch.h"
#include "peers.h"
#include "rank_plan.h"

namespace fsrr::mpi {

class rank_link final : public replay_peers {
 public:
  rank_link(MPI_Comm comm, int rank, const rank_plan& plan, size_t threads);
  ~rank_link() override;

  bool issues(thread_id t) const override { return plan_.rank_of(t) == rank_; }
  // (The reader refuses events of a thread its tables do not have: t is always in range.)
  progress_counter& remote_progress(thread_id t) override { return remote_[t < threads_ ? t : 0]; }
  uint64_t watchers(std::span<const uint64_t> keys) const override {
    return plan_.watchers(keys, rank_);
  }
  bool touched_here(uint64_t key) const override { return plan_.touched_by(key, rank_); }
  void finished(thread_id t, uint32_t count, uint64_t watchers) override;
  uint64_t start_instant() override;
  void begin(replay_shared& shared) override;
  void end() override;

  // After end(): this rank stopped on its own (not told to by another), and why.
  const std::string& own_stop() const { return own_stop_; }
  uint64_t messages_sent() const { return sent_; }
  // This rank's CLOCK_MONOTONIC minus rank 0's, as start_instant measured it.
  int64_t clock_offset() const { return offset_; }
  // An MPI call of the link failed: the replay was stopped with this.
  const std::string& failure() const { return failure_; }

 private:
  struct word {
    thread_id t;
    uint32_t count;
    uint64_t watchers;
  };
  void run();
  void send_progress(std::vector<word>& words);
  bool send(int to, int tag, const void* data, size_t bytes);
  void received(const MPI_Status& st, const std::vector<uint8_t>& buf);
  void wake();
  void sleep(uint64_t ns);

  MPI_Comm comm_;
  int rank_, size_;
  const rank_plan& plan_;
  std::unique_ptr<progress_counter[]> remote_;
  size_t threads_;
  replay_shared* shared_ = nullptr;
  std::thread thread_;
  std::mutex mu_;
  std::vector<word> outbox_;  // under mu_
  std::atomic<uint32_t> bell_{0};
  std::atomic<bool> sleeping_{false}, local_done_{false};
  std::string own_stop_, failure_;
  int done_peers_ = 0;
  bool told_to_stop_ = false;
  uint64_t sent_ = 0;
  int64_t offset_ = 0;
};

}  // namespace fsrr::mpi
