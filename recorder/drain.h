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

#include "idle_decoder.h"
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
  uint64_t decoder_idled = 0;   // times the decoder went SCHED_IDLE (idle_decoder.h)
  uint64_t decoder_raised = 0;  // ... and the drain raised it back, late or behind
};

// An idle decoder is raised when it is this late: it has not beaten for this long, or the
// oldest record it has not decoded was drained this long ago.
constexpr uint64_t idle_decoder_max_lag_ns = 20'000'000;

class drain {
 public:
  // `ring_fd`: the ring buffer map, pollable. `budget`: bytes that may wait for the decoder.
  // `after_pass(pending)`: run on the drain thread after each pass with the bytes still in
  // the ring (the pause keeper resumes the workload there); may be empty. On the heap: the
  // thread and the decoder share its queue, which does not move.
  // `idle_decoder`: the decoder may run as SCHED_IDLE while it keeps up (decoder_beat).
  static result<std::unique_ptr<drain>> open(int ring_fd, uint64_t ring_size, uint64_t budget,
                                             std::function<void(uint64_t)> after_pass = {},
                                             bool idle_decoder = false);
  ~drain();  // stops the thread
  drain(const drain&) = delete;
  drain& operator=(const drain&) = delete;

  using sink_fn = std::function<void(std::span<const uint8_t>)>;

  void start();
  // The programs are detached: empties the ring one last time and ends the thread. With
  // `sink`, the caller takes the records meanwhile (as take() does), and the queue keeps to its
  // budget; without, the last records join the queue whatever it holds.
  void stop(const sink_fn& sink = {});

  int ready_fd() const { return ready_fd_; }  // readable when records are waiting
  uint64_t pending_in_ring() const { return ring_.pending(); }

  // Hands `sink` every record waiting, in ring order. Returns how many.
  size_t take(const sink_fn& sink);

  drain_stats stats() const;

  // On the decoder thread, one thread always: decoder_beat() at least every few milliseconds
  // while it waits for records, and decoder_awake() when it wants to be awake (the end of the
  // recording). decoder_beat() makes it SCHED_IDLE unless it is behind; a watchdog thread
  // raises it back to SCHED_OTHER when it misses its beat by idle_decoder_max_lag_ns or falls
  // that far behind, as the drain does when it waits for room in the queue.
  void decoder_beat();
  void decoder_awake();

 private:
  struct slab {
    std::unique_ptr<uint64_t[]> words;  // 8-aligned, as the records are
    size_t used = 0;                    // bytes
    uint64_t records = 0;
    uint64_t since = 0;  // CLOCK_MONOTONIC ns when its first record was drained
  };

  drain(ring_reader ring, int ring_fd, uint64_t budget, std::function<void(uint64_t)> after_pass,
        bool idle_decoder);
  result<void> open_fds();

  void run();
  void last_passes();  // after stop(): until the ring is empty
  size_t pass();  // one ring emptying; returns bytes copied
  bool keep(std::span<const uint8_t> record);
  void publish();  // the slab being filled joins the queue
  // Whether one more slab fits the budget, counted in slabs' size, not the bytes they hold:
  // what the queue takes of memory. With mu_ held.
  bool has_room() const { return (ready_.size() + 1) * slab_bytes_ <= budget_; }
  // On the drain thread: whether the decoder is behind (behind_); if so it is raised.
  void note_lag();
  void watch();  // the watchdog thread

  ring_reader ring_;
  const size_t slab_bytes_;  // a quarter of the budget, 64 KiB to 4 MiB
  const uint64_t budget_;
  std::function<void(uint64_t)> after_pass_;
  int ring_fd_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;   // stop() wakes the thread through it
  int ready_fd_ = -1;  // eventfd: records queued
  int watch_fd_ = -1;  // eventfd: the watchdog's stop
  std::thread thread_;
  std::thread watch_;  // raises an idle decoder that is late or behind
  std::atomic<bool> stopping_{false};
  std::atomic<bool> taken_at_stop_{false};  // stop() has a sink: the budget holds to the end
  std::atomic<bool> finished_{false};       // the thread's last pass is done

  slab filling_;  // drain thread only
  mutable std::mutex mu_;
  std::condition_variable room_;
  std::deque<slab> ready_;
  std::vector<slab> spare_;
  uint64_t queued_ = 0;  // bytes handed over and not yet decoded
  // The decoder's lag, as the drain last saw it (note_lag), and when the drain put the
  // first record into the oldest slab in the decoder's hands (0: none).
  std::atomic<bool> behind_{false};
  std::atomic<uint64_t> in_hand_since_{0};
  drain_stats stats_;
  idle_decoder decoder_;
};

}  // namespace fsrr::recorder
