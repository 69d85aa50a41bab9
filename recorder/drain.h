// The drain: a thread that empties the kernel ring buffer into memory as soon as the programs
// wake it, so that the ring only has to absorb scheduling delays, never the decoder's: a
// directory of 100k entries settled at once, a chunk compressed, a cold disk under the initial
// tree. Records wait in slabs for the decoder, up to a budget; past it the drain stops, the
// ring fills, and the programs pause the workload until there is room again (pause.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "result.h"
#include "ring_reader.h"

namespace fsrr::recorder {

struct drain_stats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t peak_queued = 0;  // most bytes waiting for the decoder at once
  uint64_t peak_memory = 0;  // most bytes of slabs holding them (the budget bounds this)
  uint64_t full = 0;         // passes the budget cut short
  uint64_t wrapped = 0;      // records that crossed the ring's end (ring_reader)
};

class drain {
 public:
  // `ring_fd`: the ring buffer map, pollable. `budget`: bytes that may wait for the decoder.
  // `after_pass(pending)`: run on the drain thread after each pass with the bytes still in
  // the ring (the pause keeper resumes the workload there); may be empty. On the heap: the
  // thread and the decoder share its queue, which does not move.
  static result<std::unique_ptr<drain>> open(int ring_fd, uint64_t ring_size, uint64_t budget,
                                             std::function<void(uint64_t)> after_pass = {});
  ~drain();  // stops the thread
  drain(const drain&) = delete;
  drain& operator=(const drain&) = delete;

  void start();
  // The programs are detached: empties the ring one last time and ends the thread.
  void stop();

  int ready_fd() const { return ready_fd_; }  // readable when records are waiting
  uint64_t pending_in_ring() const { return ring_.pending(); }

  // Hands `sink` every record waiting, in ring order. Returns how many.
  size_t take(const std::function<void(std::span<const uint8_t>)>& sink);

  drain_stats stats() const;

 private:
  struct slab {
    std::unique_ptr<uint64_t[]> words;  // 8-aligned, as the records are
    size_t used = 0;                    // bytes
    uint64_t records = 0;
  };

  drain(ring_reader ring, int ring_fd, uint64_t budget, std::function<void(uint64_t)> after_pass);
  result<void> open_fds();

  void run();
  size_t pass();  // one ring emptying; returns bytes copied
  bool keep(std::span<const uint8_t> record);
  void publish();  // the slab being filled joins the queue
  // Whether one more slab fits the budget, counted in slabs' size, not the bytes they hold:
  // what the queue takes of memory. With mu_ held.
  bool has_room() const { return (ready_.size() + 1) * slab_bytes_ <= budget_; }

  ring_reader ring_;
  const size_t slab_bytes_;  // a quarter of the budget, 64 KiB to 4 MiB
  const uint64_t budget_;
  std::function<void(uint64_t)> after_pass_;
  int ring_fd_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;   // stop() wakes the thread through it
  int ready_fd_ = -1;  // eventfd: records queued
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  slab filling_;  // drain thread only
  mutable std::mutex mu_;
  std::condition_variable room_;
  std::deque<slab> ready_;
  std::vector<slab> spare_;
  uint64_t queued_ = 0;  // bytes in ready_
  drain_stats stats_;
};

}  // namespace fsrr::recorder
