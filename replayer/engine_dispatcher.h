// The replay engine's insides (engine.h is its face): the dispatcher that reads the trace
// and hands each op to the thread that replays it, its lanes and batches, and the RAII helpers
// its threads use. Private to replayer/engine*.cc: engine.cc (the dispatcher's own work and
// the run), engine_single.cc (one recorded thread: no queues), engine_lanes.cc (one replay
// thread per recorded thread, ordered across them).
#pragma once

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <thread>

#include "cpu_spread.h"
#include "engine.h"
#include "engine_options.h"
#include "report.h"
#include "lane_queue.h"
#include "op_dispatch.h"
#include "ordering.h"

namespace fsrr::engine_detail {

inline bool issued_op(op k) {
  const op_class c = info(k).cls;
  return c != op_class::process && c != op_class::unreplayable;
}

// An afap replay's threads hand work to each other all the time: as SCHED_BATCH threads, one
// that is woken waits for a free CPU or the tick instead of preempting the thread that woke it,
// which would then wait itself. Only an ordinary thread is made one; its policy comes back
// when this goes.
struct batch_policy : thread_policy {
  explicit batch_policy(bool on)
      : thread_policy(on && (::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_OTHER,
                      SCHED_BATCH, 0) {}
};

// A working directory of the calling thread's own for the replay (op_runner enters the
// directories it names objects from); the thread's former one is restored when it goes.
class own_working_directory {
 public:
  explicit own_working_directory(op_runner& runner) {
    saved_ = ::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (saved_ >= 0 && ::unshare(CLONE_FS) == 0) runner.own_working_directory();
  }
  ~own_working_directory() {
    if (saved_ < 0) return;
    [[maybe_unused]] const int r = ::fchdir(saved_);
    ::close(saved_);
  }
  own_working_directory(const own_working_directory&) = delete;
  own_working_directory& operator=(const own_working_directory&) = delete;

 private:
  int saved_ = -1;
};

// Replay threads carry the recorded thread's tid in their name ("fsrr-r<tid>"), so a
// recording of the replay can be matched with the trace (bench/trace_compare). A recorder sees
// a thread's name as it was at clone, so the dispatcher wears the name while it starts the
// thread.
class replay_thread_name {
 public:
  explicit replay_thread_name(int32_t tid) {
    have_old_ = ::pthread_getname_np(::pthread_self(), old_, sizeof old_) == 0;
    char name[16];
    std::snprintf(name, sizeof name, "fsrr-r%d", tid);
    ::pthread_setname_np(::pthread_self(), name);
  }
  ~replay_thread_name() {
    if (have_old_) ::pthread_setname_np(::pthread_self(), old_);
  }
  replay_thread_name(const replay_thread_name&) = delete;
  replay_thread_name& operator=(const replay_thread_name&) = delete;

 private:
  char old_[16] = {};
  bool have_old_ = false;
};

// Waits for the op's turn (the clock, then the ops of other threads it depends on), issues it
// and counts it.
void execute(const work_item& w, const dep_list* deps, op_runner& runner, thread_schedule& sched,
             const schedule_clock& clock, replay_stats& stats, replay_shared& s);

// One recorded thread's replay thread and the queue that feeds it. Each side reads the other
// side's counter only when its own copy says the queue is full or empty: a counter the other
// CPU has written costs a cache-line transfer on every read.
struct lane {
  struct queued {
    work_item w;
    dep_list deps;  // the ops of other lanes it waits for
    uint64_t watchers = 0;  // other processes to tell when it is done (peers.h)
  };
  int32_t tid = 0;
  std::string host;  // a merged trace's host of the thread, "" else (mismatch lines)
  thread_id id = no_id;
  lane_queue<queued> q;
  uint32_t done_seen = 0;  // dispatcher's last look at q.done
  bool running = false;
  std::atomic<bool> exited{false};
  std::thread thread;
  replay_stats stats;
  // A thread another process issues (peers.h): no queue and no replay thread here, only its
  // ops' numbering, as its owner's queue numbers them, and the owner's progress.
  progress_counter* remote = nullptr;
  uint32_t remote_tail = 0;
};

// A single recorded thread's ops, settled a batch at a time by a helper thread while the
// replay thread issues the batches before. Decoding and settling are about three quarters of
// the replay's own CPU time per op of a copy; on a second CPU they overlap the syscalls
// instead. The threads meet once per batch, and a batch is read in one sweep.
struct op_batches {
  static constexpr uint32_t items = 128;
  static constexpr uint32_t count = 64;  // 8192 ops: several ms of a copy's syscalls
  struct batch {
    std::unique_ptr<work_item[]> ops{new work_item[items]};
    uint32_t size = 0;
    bool last = false;  // nothing follows
    std::string error;  // why it is the last: a damaged trace
  };
  std::unique_ptr<batch[]> ring{new batch[count]};
  progress_counter filled;   // batches written by the helper
  progress_counter drained;  // batches the replay thread is done with
  std::atomic<bool> quit{false};
  std::thread helper;
};

class dispatcher {
 public:
  dispatcher(trace_reader& r, const target_root& t, const data_source& d, const engine_options& o);
  replay_stats run(replay_loop loop);

 private:
  void prepare(work_item& w, const event& e);
  void splice_side(work_item& w) const;
  size_t order_keys(const work_item& w, uint64_t* keys) const;
  bool next(trace_reader::event_stream& events, event& e);
  void maybe_progress(uint64_t done, uint64_t ts);
  void run_single(trace_reader::event_stream& events, const event& first, op_batches* ahead);
  void single_inline(trace_reader::event_stream& events, const event& first, op_runner& runner);
  void single_ahead(op_batches& b, op_runner& runner);
  void settle_ahead(trace_reader::event_stream& events, op_batches& b);
  void run_lanes(trace_reader::event_stream& events, event e);
  void dispatch_all(trace_reader::event_stream& events, event e, uint64_t* keys);
  void settle_remote(lane& l, const event& e, uint64_t* keys);
  void hold_back(const event& e);
  lane& lane_for(thread_id t);
  lane::queued& reserve(lane& l, bool obey_stop);
  void push(lane& l);
  void start(lane& l);
  void lane_loop(lane& l, lane_queue<lane::queued>::cursor at);
  void finish(lane& l);
  void reap(bool all);
  void recycle();
  void retire_paths();

  trace_reader& reader_;
  const engine_options& opt_;
  replay_shared shared_;
  fd_map fds_;
  data_flow flow_;  // in trace order, as fds_: where each write's bytes come from
  path_cache paths_;
  schedule_clock clock_;
  cpu_spread spread_;  // timed replays' lanes on CPUs of their own
  replay_stats total_;
  uint64_t seq_ = 0;
  uint64_t events_total_ = 0, last_ts_ = 0, last_progress_ = 0;
  size_t string_count_ = 0;

  order_tracker order_;
  uint32_t depth_ = 0;       // ops queued to one lane before the dispatcher waits for it
  uint32_t live_lanes_ = 0;  // with a replay thread running
  // Faithful: ops due before this may be handed out without a look at the clock.
  uint64_t handed_until_ = 0;
  std::vector<std::unique_ptr<lane>> lanes_;
  std::vector<lane*> ending_;
  struct pending_recycle {
    handle_id h;
    const progress_counter* lane;
    uint32_t count;
  };
  std::deque<pending_recycle> recycle_;
  replay_peers* peers_ = nullptr;
  work_item remote_item_;  // a remote op, settled and not issued
  dep_list remote_deps_;   // what it waits for: its owner's business
  static const std::atomic<bool> never_;
};

std::vector<thread_info> thread_table(trace_reader& r);

}  // namespace fsrr::engine_detail
