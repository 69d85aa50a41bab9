// Requests a storage engine submitted (event::via), replayed through the same engine: an
// io_uring request through a ring of the replay's own per recorded ring, an AIO request
// through a context per recorded context. A request is submitted and not waited for; it is
// reaped once the recorded order needs it: before an op that started after the request had
// completed in the recording (so at most the recorded requests are in flight at once), before
// an op that closes an fd, and at the thread's end. As fast as possible, a request waits
// only for what it depends on and for room: the requests on its file whose byte range it
// overlaps (any, for an op on the whole file) that had completed when it was submitted in
// the recording, and a free place on its ring or context, which holds no more in flight
// than the recording's deepest so far (its program's queue depth, as fio's iodepth). A
// linked chain goes whole and keeps the recorded order's rule. Requests queued between two of the
// thread's recorded io_uring_enter (io_submit) calls go to the kernel in one call, as they
// went; a linked chain is never split.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <span>
#include <vector>

#include "event.h"
#include "report.h"

namespace fsrr {

struct work_item;

class engine_requests {
 public:
  // A request ended: its work item, the result and the latency clock's tick it started at.
  using done_fn = std::function<void(const work_item&, int64_t result, uint64_t start_tick)>;
  engine_requests(std::array<engine_stats, 4>& stats, done_fn done);
  ~engine_requests();
  engine_requests(const engine_requests&) = delete;
  engine_requests& operator=(const engine_requests&) = delete;

  // Submits w (an io_uring or AIO request) on replay fd `fd`, writing `data` (a write's bytes,
  // copied) or reading into `sink`. `ordinal`: the op's number in its thread. False: the
  // engine cannot be had here (no io_uring, no AIO): the caller issues the syscall instead.
  // `append`: the fd was opened O_APPEND (a write lands at the end, wherever it was recorded).
  bool submit(const work_item& w, int fd, std::span<const uint8_t> data,
              std::span<uint8_t> sink, uint64_t ordinal, bool append = false);
  // Before an op recorded at `ts`: reaps every request that completed before it started.
  void reap_before(uint64_t ts);
  // As fast as possible, before request e on replay fd `fd`: reaps what has completed, then
  // waits for the requests it depends on and for room on its ring or context (above).
  void reap_for(const event& e, int fd, bool append = false);
  // The thread's recorded io_uring_enter or io_submit: the requests queued so far go now.
  void end_batch() { flush(); }
  void flush();  // submits what is queued, on every ring and context
  void drain();  // submits and reaps everything
  bool idle() const { return busy_ == 0; }
  // The lowest ordinal still in flight, or `none` if none is.
  static constexpr uint64_t none = UINT64_MAX;
  uint64_t oldest() const;
  // Replay fd `fd` is about to be closed: no registered slot may keep it.
  void forget_fd(int fd);

 private:
  struct request;
  struct ring;
  struct context;
  request* take_slot();
  void finish(request& r, int64_t res);
  ring* ring_of(uint32_t queue, bool sqpoll);
  context* context_of(uint32_t queue);
  bool submit_uring(request& r, int fd);
  int registered_buffer(ring& g, request& r, bool reads);
  void release_buffer(const request& r);
  bool submit_aio(request& r, int fd);
  void submit_ring(ring& g);
  void reap(request& r);             // until r has completed
  bool reap_ring(ring& g, bool wait);  // false: waiting failed
  bool reap_context(context& c, bool wait);
  void note_depth(engine en, uint32_t queue, uint64_t ts, uint64_t done);
  // The recorded requests of a queue in flight when a request recorded at ts was submitted,
  // it included.
  uint64_t recorded_depth(engine en, uint32_t queue, uint64_t ts);
  bool wait_for_room(engine en, uint32_t queue);  // false: nothing there to wait for

  std::array<engine_stats, 4>& stats_;
  done_fn done_;
  std::vector<std::unique_ptr<request>> slots_;
  std::vector<request*> free_;
  std::vector<request*> in_flight_;  // unordered
  uint64_t busy_ = 0;
  std::array<uint64_t, 4> busy_by_engine_{};
  std::map<uint32_t, std::unique_ptr<ring>> rings_;
  std::map<uint32_t, std::unique_ptr<context>> contexts_;
  bool no_uring_ = false, no_aio_ = false;
  // Recorded completions of each queue's requests still in flight at the recorded time: the
  // recorded depth a submission met.
  std::map<std::pair<int, uint32_t>, std::priority_queue<uint64_t, std::vector<uint64_t>,
                                                          std::greater<>>> recorded_;
  std::map<std::pair<int, uint32_t>, uint64_t> deepest_;  // the recorded depth's maximum so far
};

}  // namespace fsrr
