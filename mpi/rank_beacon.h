// A connection from every rank to rank 0, beside MPI, that says one thing: whether the rank is
// still there. A rank that ends on purpose says so first (a goodbye at the end; "ending" when
// it leaves because the job fails; "rank N died" when it saw a peer of its node die); one
// killed or crashed closes it without a word (the kernel closes a dead process's sockets), and
// rank 0 sees that at once, wherever the rank ran — also a rank alone on its node, whom no
// peer there watches. TCP keepalive (5 s idle, 3 probes 1 s apart) notices a node that stops
// answering. The hello carries a token rank 0 made for this job: a stray connection is no rank.
#pragma once

#include <mpi.h>

#include <atomic>
#include <string>
#include <vector>

namespace fsrr::mpi {

class rank_beacon {
 public:
  // Collective. Rank 0 listens on every address of its host and sends them to the others;
  // each connects to the first that answers within half a second. A rank that reaches none
  // (a firewall) is not linked: its peers on its node still watch it.
  static rank_beacon open(MPI_Comm comm, int rank, int size);
  rank_beacon() = default;
  rank_beacon(rank_beacon&& o) noexcept;
  rank_beacon& operator=(rank_beacon&& o) noexcept;
  ~rank_beacon();

  // By rank: whether its death is rank 0's to name (rank 0's own is not: it cannot).
  const std::vector<bool>& linked() const { return linked_; }
  // Rank 0: the connection of each linked rank (-1 for others), to poll.
  const std::vector<int>& fds() const { return fds_; }
  // Not rank 0: this rank goes on purpose; its connection's end is not a death. goodbye() at
  // the job's end; ending() when it leaves because the job fails (an abort: others will be
  // killed, not dead); saw_death() when a peer of its node died before it leaves.
  void goodbye();
  void ending();
  void saw_death(int rank);

  // What rank 0 read from a rank's connection when poll said it is readable.
  struct news {
    enum kind { none, left, ending, saw_death, died, unreachable } what = none;
    int rank = -1;  // saw_death: the rank that died
  };
  // One read; `pending` keeps a message cut in two between reads.
  static news read(int fd, std::string& pending);

 private:
  std::vector<bool> linked_;
  std::vector<int> fds_;
  void say(const std::string& what);
  int own_ = -1;  // not rank 0: the connection to it
  std::atomic<bool> said_{false};  // one word, the last (the watcher's or the main thread's)
};

}  // namespace fsrr::mpi
