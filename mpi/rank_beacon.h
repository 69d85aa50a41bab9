// A connection from every rank to rank 0, beside MPI, that says one thing: whether the rank is
// still there. A rank that ends on purpose says goodbye first; one killed or crashed closes
// it without a word (the kernel closes a dead process's sockets), and rank 0 sees that at
// once, wherever the rank ran — also a rank alone on its node, whom no peer there watches.
// TCP keepalive (5 s idle, 3 probes 1 s apart) notices a node that stops answering.
#pragma once

#include <mpi.h>

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
  // Not rank 0: this rank goes on purpose; its connection's end is not a death.
  void goodbye();

  // What rank 0 read on `fd` when poll said it is readable: still there (a goodbye or
  // nothing yet), gone without a word, or its node stopped answering.
  enum class news { none, left, died, unreachable };
  static news read(int fd);

 private:
  std::vector<bool> linked_;
  std::vector<int> fds_;
  int own_ = -1;  // not rank 0: the connection to it
  bool said_goodbye_ = false;
};

}  // namespace fsrr::mpi
