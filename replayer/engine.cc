#include "engine.h"

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

#include <fmt/format.h>

#include "lane_queue.h"
#include "op_dispatch.h"
#include "ordering.h"
#include "trace_error.h"

namespace fsrr {
namespace {

void raise_fd_limit() {
  rlimit r;
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

bool issued_op(op k) {
  const op_class c = info(k).cls;
  return c != op_class::process && c != op_class::unreplayable;
}

// An afap replay's threads hand work to each other all the time: as SCHED_BATCH threads, one
// that is woken waits for a free CPU or the tick instead of preempting the thread that woke it,
// which would then wait itself. Restores the thread's policy when it goes.
class batch_policy {
 public:
  explicit batch_policy(bool on) {
    if (!on || ::pthread_getschedparam(::pthread_self(), &policy_, &param_) != 0) return;
    const sched_param batch{};
    set_ = policy_ == SCHED_OTHER &&
           ::pthread_setschedparam(::pthread_self(), SCHED_BATCH, &batch) == 0;
  }
  ~batch_policy() {
    if (set_) ::pthread_setschedparam(::pthread_self(), policy_, &param_);
  }
  batch_policy(const batch_policy&) = delete;
  batch_policy& operator=(const batch_policy&) = delete;

 private:
  int policy_ = SCHED_OTHER;
  sched_param param_{};
  bool set_ = false;
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
             const schedule_clock& clock, replay_stats& stats, replay_shared& s) {
  if (s.stop.load(std::memory_order_relaxed)) return;
  uint64_t due = 0, issued = 0;
  // Ops that are not issued (exit, mmap) wait for their time too: a replay lasts as long as
  // the recording, up to its last event.
  if (clock.timed()) {
    due = sched.due(w.ev);
    if (due) issued = wait_until(due, clock.options().spin_ns, s.stop);
  }
  if (deps && deps->size() && !deps->reached()) {
    // In a timed replay the op waited for was due earlier and ends any moment: a thread woken
    // from a futex would be tens of microseconds late.
    deps->wait(s.stop, clock.timed() ? clock.options().spin_ns : 0);
    if (due) issued = monotonic_ns();
  }
  if (due && issued_op(w.ev.kind)) stats.lateness.record(issued > due ? issued - due : 0);
  const uint64_t took = runner.run(w);
  // The end of the op on the schedule's clock, from the wait's last reading and the latency.
  if (clock.options().mode == timing_mode::think)
    sched.finished(w.ev, issued ? issued + took : monotonic_ns());
}

// One recorded thread's replay thread and the queue that feeds it. Each side reads the other
// side's counter only when its own copy says the queue is full or empty: a counter the other
// CPU has written costs a cache-line transfer on every read.
struct lane {
  struct queued {
    work_item w;
    dep_list deps;  // the ops of other lanes it waits for
  };
  int32_t tid = 0;
  lane_queue<queued> q;
  uint32_t done_seen = 0;  // dispatcher's last look at q.done
  bool running = false;
  std::atomic<bool> exited{false};
  std::thread thread;
  replay_stats stats;
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
  replay_stats run();

 private:
  void prepare(work_item& w, const event& e);
  size_t order_keys(const work_item& w, uint64_t* keys) const;
  bool next(trace_reader::event_stream& events, event& e);
  void maybe_progress(uint64_t done, uint64_t ts);
  void run_single(trace_reader::event_stream& events, const event& first, op_batches* ahead);
  void single_inline(trace_reader::event_stream& events, const event& first, op_runner& runner);
  void single_ahead(op_batches& b, op_runner& runner);
  void settle_ahead(trace_reader::event_stream& events, op_batches& b);
  void run_lanes(trace_reader::event_stream& events, event e);
  void dispatch_all(trace_reader::event_stream& events, event e, uint64_t* keys);
  void hold_back(const event& e);
  lane& lane_for(thread_id t);
  lane::queued& reserve(lane& l, bool obey_stop);
  void push(lane& l);
  void start(lane& l);
  void lane_loop(lane& l, lane_queue<lane::queued>::cursor at);
  void finish(lane& l);
  void reap(bool all);
  void recycle();

  trace_reader& reader_;
  const engine_options& opt_;
  replay_shared shared_;
  fd_map fds_;
  data_flow flow_;  // in trace order, as fds_: where each write's bytes come from
  path_cache paths_;
  schedule_clock clock_;
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
  static const std::atomic<bool> never_;
};

const std::atomic<bool> dispatcher::never_{false};

std::vector<thread_info> thread_table(trace_reader& r) {
  std::vector<thread_info> v(r.thread_count() + 1);
  for (thread_id t = 1; t < v.size(); ++t) v[t] = r.thread(t);
  return v;
}

dispatcher::dispatcher(trace_reader& r, const target_root& t, const data_source& d,
                       const engine_options& o)
    : reader_(r),
      opt_(o),
      shared_(t, d),
      fds_(thread_table(r)),
      flow_(r, false),
      paths_(r, t),
      clock_(o.timing, 0),
      lanes_(r.thread_count() + 1) {
  shared_.strict = o.strict;
  shared_.issue_all = o.issue_all;
  shared_.privilege = o.privilege;
  shared_.listed_mismatches = o.listed_mismatches;
  depth_ = static_cast<uint32_t>(
      std::clamp<size_t>(clock_.timed() ? o.timed_queue_limit : o.queue_depth, 16, 1u << 30));
  string_count_ = r.string_count();
  latency_clock::get();  // calibrates (a few ms) before the replay's clock starts
  if (o.progress) {
    const auto& sum = r.summary();
    events_total_ = sum.events;
    last_ts_ = sum.last_ts;
  }
}

void dispatcher::prepare(work_item& w, const event& e) {
  w.ev = e;
  w.seq = seq_++;
  w.end = false;
  fds_.apply(e, w.fx);
  flow_.apply(e, w.fx, fds_, &w.sources);
  shared_.handles.ensure(fds_.handle_capacity());
  w.p1 = has(e.kind, F_PATH) ? paths_.get(e.path) : nullptr;
  w.p2 = has(e.kind, F_PATH2) ? paths_.get(e.path2) : nullptr;
  const op_class cls = info(e.kind).cls;
  const bool named = e.kind == op::symlink || e.kind == op::symlinkat || cls == op_class::xattr;
  w.text = named && has(e.kind, F_AUX) && e.aux != 0 && e.aux <= string_count_
               ? &reader_.string(static_cast<string_id>(e.aux))
               : nullptr;
  // Opens (a FIFO), namespace changes (a directory) and the path calls that may follow a final
  // symlink look at the file's type.
  const bool typed = cls == op_class::open || cls == op_class::name || cls == op_class::xattr ||
                     cls == op_class::meta || e.kind == op::fd_bind;
  w.ftype = typed && e.file ? reader_.file(e.file).type & S_IFMT : 0;
  // A directory or a symlink to one may be on the way to a name a replay thread has cached.
  const bool renames = e.kind == op::rename || e.kind == op::renameat || e.kind == op::renameat2;
  const bool unlinks = e.kind == op::unlink || e.kind == op::unlinkat;
  const bool may_lead = w.ftype == 0 || S_ISDIR(w.ftype) || S_ISLNK(w.ftype);
  w.dir_change = e.kind == op::rmdir || ((renames || unlinks) && may_lead) ||
                 (renames && (e.flags & RENAME_EXCHANGE));
}

// The files, paths (and their parent directories) and open files the op touches. The parent
// directories are shared: ops on different names in one directory do not wait for each other.
size_t dispatcher::order_keys(const work_item& w, uint64_t* keys) const {
  size_t n = 0;
  auto add = [&](uint64_t k) {
    if ((k & 0xffffffffu) == 0) return;
    for (size_t i = 0; i < n; ++i)
      if ((keys[i] & ~order_marks) == (k & ~order_marks)) {  // all if either, shared if both
        keys[i] =
            (keys[i] & ~order_marks) | ((keys[i] | k) & order_all) | (keys[i] & k & order_shared);
        return;
      }
    keys[n++] = k;
  };
  const event& e = w.ev;
  add(order_key(order_kind::file, e.file));
  add(order_key(order_kind::file, e.file2));
  for (const resolved_path* p : {w.p1, w.p2})
    if (p) add(order_key(order_kind::path, p->parent) | order_shared);
  if (w.p1) add(order_key(order_kind::path, e.path));
  if (w.p2) add(order_key(order_kind::path, e.path2));
  // A directory's listing depends on every name in it.
  if (info(e.kind).cls == op_class::dir && w.fx.h1)
    add(order_key(order_kind::path, fds_.handle(w.fx.h1).path));
  add(order_key(order_kind::handle, w.fx.h1));
  add(order_key(order_kind::handle, w.fx.h2));
  for (size_t i = 0; i < w.fx.released.size() && n < 16; ++i)
    add(order_key(order_kind::handle, w.fx.released[i]) | order_all);
  return n;
}

bool dispatcher::next(trace_reader::event_stream& events, event& e) {
  if (shared_.stop.load(std::memory_order_relaxed)) return false;
  if (opt_.cancel && opt_.cancel->load(std::memory_order_relaxed)) {
    shared_.request_stop("interrupted");
    return false;
  }
  try {
    // Bytes through pipes and sockets are not replayed: they only tell the data flow where
    // the bytes written from them came from.
    while (events.next(e)) {
      if (info(e.kind).cls != op_class::stream) return true;
      flow_.apply(e, {}, fds_);
    }
    return false;
  } catch (const trace_error& err) {
    shared_.request_stop(fmt::format("trace: {}", err.what()));
    return false;
  }
}

// `done`: events taken so far; `ts`: the recorded time of the latest.
void dispatcher::maybe_progress(uint64_t done, uint64_t ts) {
  if (!opt_.progress || (done & 1023) != 0) return;
  const uint64_t now = monotonic_ns();
  if (now - last_progress_ < 200'000'000) return;
  last_progress_ = now;
  engine_progress p;
  p.events_done = done;
  p.events_total = events_total_;
  p.elapsed_ns = now - clock_.start_ns();
  if (clock_.timed() && last_ts_ > ts)
    p.eta_ns = clock_.scaled(last_ts_ - ts);
  else if (done && events_total_ > done)
    p.eta_ns = static_cast<uint64_t>(static_cast<double>(p.elapsed_ns) *
                                     static_cast<double>(events_total_ - done) /
                                     static_cast<double>(done));
  opt_.progress(p);
}

// One recorded thread: no queues, no ordering, every op issued from the calling thread, and
// settled on it too unless a helper thread does that ahead.
void dispatcher::run_single(trace_reader::event_stream& events, const event& first,
                            op_batches* ahead) {
  op_runner runner(shared_, total_, reader_.thread_count() ? reader_.thread(first.thread).tid : 0);
  const own_working_directory cwd(runner);
  total_.threads = 1;
  // Timed ops sleep until shortly before they are due: the default slack (50 µs) would eat
  // the margin. The calling thread gets its own slack back afterwards.
  const int slack = ::prctl(PR_GET_TIMERSLACK);
  if (clock_.timed()) ::prctl(PR_SET_TIMERSLACK, 1UL);
  struct restore_slack {
    int ns;
    ~restore_slack() {
      if (ns > 0) ::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(ns));
    }
  } restore{clock_.timed() ? slack : 0};
  if (!ahead) {
    try {
      single_inline(events, first, runner);
    } catch (const std::exception& err) {  // a damaged table entry: end cleanly all the same
      shared_.request_stop(err.what());
    }
    return;
  }
  op_batches& b = *ahead;
  b.helper = std::thread([&, first] {
    // It needs no fds (the trace is mapped): in an fd table of its own it leaves the replay
    // thread alone in the process's, where the kernel then skips taking a reference on the
    // file for every call, as it does for a single-threaded cp.
    ::unshare(CLONE_FILES);
    // Its wake-ups never preempt the replay thread: it waits for an idle CPU or a tick.
    const sched_param batch_policy{};
    ::pthread_setschedparam(::pthread_self(), SCHED_BATCH, &batch_policy);
    ::pthread_setname_np(::pthread_self(), "fsrr-settle");
    event e = first;
    try {
      prepare(b.ring[0].ops[0], e);
      b.ring[0].size = 1;
    } catch (const std::exception& err) {
      b.ring[0].last = true;
      b.ring[0].error = err.what();
    }
    if (!b.ring[0].last) settle_ahead(events, b);
    b.filled.advance();
  });
  try {
    single_ahead(b, runner);
  } catch (const std::exception& err) {
    shared_.request_stop(err.what());
  }
  b.quit.store(true, std::memory_order_relaxed);
  b.drained.advance(op_batches::count);  // wakes a helper waiting for room
  b.helper.join();
}

void dispatcher::single_inline(trace_reader::event_stream& events, const event& first,
                               op_runner& runner) {
  thread_schedule sched(clock_);
  work_item w;
  event e = first;
  uint64_t done = 0;
  do {
    prepare(w, e);
    execute(w, nullptr, runner, sched, clock_, total_, shared_);
    runner.release(w);
    for (const handle_id h : w.fx.released) fds_.recycle(h);
    maybe_progress(++done, e.ts);
  } while (next(events, e));
}

// The replay thread's side: issues the batches in order. Batch 0 holds the first op.
void dispatcher::single_ahead(op_batches& b, op_runner& runner) {
  thread_schedule sched(clock_);
  uint32_t filled_seen = 0;
  uint64_t done = 0;
  for (uint32_t n = 0;; ++n) {
    if (n == filled_seen) {
      b.filled.wait(n + 1, never_);
      filled_seen = b.filled.value.load(std::memory_order_acquire);
    }
    const op_batches::batch& batch = b.ring[n % op_batches::count];
    for (uint32_t i = 0; i < batch.size; ++i) {
      if (shared_.stop.load(std::memory_order_relaxed)) return;
      const work_item& w = batch.ops[i];
      execute(w, nullptr, runner, sched, clock_, total_, shared_);
      runner.release(w);
      maybe_progress(++done, w.ev.ts);
    }
    if (batch.last) {
      if (!batch.error.empty()) shared_.request_stop(batch.error);
      return;
    }
    b.drained.advance();
  }
}

// The helper's side: settles ops into the batches after the first one. A batch's slot is
// refilled only after the replay thread is done with it, so the handles its ops released
// (their fds closed by then) may be handed out again.
void dispatcher::settle_ahead(trace_reader::event_stream& events, op_batches& b) {
  uint32_t drained_seen = 0;
  event e;
  for (uint32_t n = 1;; ++n) {
    b.filled.advance();  // batch n - 1
    if (n - drained_seen >= op_batches::count) {
      drained_seen = b.drained.value.load(std::memory_order_acquire);
      if (n - drained_seen >= op_batches::count) {  // full: refill once half is free
        b.drained.wait(n - op_batches::count / 2, b.quit);
        drained_seen = b.drained.value.load(std::memory_order_acquire);
      }
    }
    op_batches::batch& batch = b.ring[n % op_batches::count];
    for (uint32_t i = 0; i < batch.size; ++i)
      for (const handle_id h : batch.ops[i].fx.released) fds_.recycle(h);
    batch.size = 0;
    if (b.quit.load(std::memory_order_relaxed)) {
      batch.last = true;
      return;
    }
    try {
      while (batch.size < op_batches::items && next(events, e)) {
        prepare(batch.ops[batch.size], e);
        ++batch.size;
      }
      batch.last = batch.size < op_batches::items;
    } catch (const std::exception& err) {
      batch.last = true;
      batch.error = err.what();
    }
    if (batch.last) return;
  }
}

lane& dispatcher::lane_for(thread_id t) {
  if (t >= lanes_.size()) lanes_.resize(t + 1);
  if (!lanes_[t]) {
    lanes_[t] = std::make_unique<lane>();
    lanes_[t]->tid = reader_.thread(t).tid;
    ++total_.threads;
  }
  return *lanes_[t];
}

void dispatcher::start(lane& l) {
  if (l.thread.joinable()) {  // events after the thread's exit: the old replay thread goes first
    l.thread.join();
    std::erase(ending_, &l);
    total_.merge(l.stats, opt_.listed_mismatches);
    l.stats = replay_stats{};
  }
  l.exited = false;
  l.running = true;
  ++live_lanes_;
  const replay_thread_name name(l.tid);
  l.thread = std::thread(&dispatcher::lane_loop, this, std::ref(l), l.q.start());
}

void dispatcher::lane_loop(lane& l, lane_queue<lane::queued>::cursor at) {
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  const batch_policy batch(!clock_.timed());
  {
    op_runner runner(shared_, l.stats, l.tid);
    if (::unshare(CLONE_FS) == 0) runner.own_working_directory();
    thread_schedule sched(clock_);
    for (;;) {
      const lane::queued& q = l.q.next(at, never_);
      if (q.w.end) {
        l.q.finished(at);
        break;
      }
      execute(q.w, &q.deps, runner, sched, clock_, l.stats, shared_);
      runner.release(q.w);
      l.q.finished(at);
    }
  }
  l.exited.store(true, std::memory_order_release);
}

lane::queued& dispatcher::reserve(lane& l, bool obey_stop) {
  const uint32_t tail = l.q.tail();
  // Many threads at once share a budget of queued ops (a few hundred bytes each).
  constexpr uint32_t budget = 1u << 18, least = 256;
  const uint32_t depth = std::min(depth_, std::max(least, budget / std::max(live_lanes_, 1u)));
  if (tail - l.done_seen >= depth) {
    l.done_seen = l.q.done.value.load(std::memory_order_acquire);
    // When full, wait until half is done: one wake-up per half queue, not per op.
    if (tail - l.done_seen >= depth) {
      l.q.done.wait(tail - depth / 2, obey_stop ? shared_.stop : never_);
      l.done_seen = l.q.done.value.load(std::memory_order_acquire);
    }
  }
  return l.q.slot();
}

// Hands the op just written to the lane at once: another lane may be waiting for it.
void dispatcher::push(lane& l) {
  l.q.publish();
}

// In a faithful replay an op is handed out only shortly before it is due, which bounds what
// the queues hold however far ahead the trace is read. (In think mode the threads may run
// ahead of the recorded times; there the queue limit alone bounds them.)
void dispatcher::hold_back(const event& e) {
  const uint64_t at = clock_.at(e.ts);
  if (at < handed_until_) return;
  const uint64_t lead = opt_.timed_lead_ns;
  uint64_t now = monotonic_ns();
  while (at > now + lead && !shared_.stop.load(std::memory_order_relaxed)) {
    if (opt_.cancel && opt_.cancel->load(std::memory_order_relaxed)) {
      shared_.request_stop("interrupted");
      break;
    }
    now = wait_until(std::min(at - lead, now + 50'000'000), 0, shared_.stop);
  }
  handed_until_ = now + lead;
}

void dispatcher::finish(lane& l) {
  if (!l.running) return;
  lane::queued& q = reserve(l, false);
  q.w.end = true;
  q.w.fx.clear();
  q.deps.clear();
  push(l);
  l.running = false;
  --live_lanes_;
  ending_.push_back(&l);
}

void dispatcher::reap(bool all) {
  std::erase_if(ending_, [&](lane* l) {
    if (!all && !l->exited.load(std::memory_order_acquire)) return false;
    l->thread.join();
    total_.merge(l->stats, opt_.listed_mismatches);
    l->stats = replay_stats{};
    if (!l->running) l->q.release();
    return true;
  });
}

void dispatcher::recycle() {
  while (!recycle_.empty() && recycle_.front().lane->reached(recycle_.front().count)) {
    fds_.recycle(recycle_.front().h);
    recycle_.pop_front();
  }
}

void dispatcher::run_lanes(trace_reader::event_stream& events, event e) {
  const batch_policy batch(!clock_.timed());
  uint64_t keys[24];
  try {
    dispatch_all(events, e, keys);
  } catch (const std::exception& err) {  // a damaged table entry: end cleanly all the same
    shared_.request_stop(err.what());
  }
  for (auto& l : lanes_)
    if (l) finish(*l);
  reap(true);
}

void dispatcher::dispatch_all(trace_reader::event_stream& events, event e, uint64_t* keys) {
  const bool faithful = clock_.options().mode == timing_mode::faithful;
  do {
    if (faithful) hold_back(e);
    lane& l = lane_for(e.thread);
    if (!l.running) start(l);
    lane::queued& q = reserve(l, true);
    if (shared_.stop.load(std::memory_order_relaxed)) break;
    prepare(q.w, e);
    q.deps.clear();
    const uint32_t index = l.q.tail();
    order_.add(&l.q.done, index, e.ts, e.ts + e.dur, {keys, order_keys(q.w, keys)}, q.deps);
    for (const handle_id h : q.w.fx.released) recycle_.push_back({h, &l.q.done, index + 1});
    push(l);
    if (e.kind == op::exit) finish(l);
    if ((seq_ & 255) == 0) {
      recycle();
      reap(false);
    }
    maybe_progress(seq_, e.ts);
  } while (next(events, e));
}

// Settling ops on a helper thread pays only where it can run beside the replay thread.
bool settle_ahead_possible(const engine_options& o) {
  cpu_set_t cpus;
  return o.decode_ahead && ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

replay_stats dispatcher::run() {
  raise_fd_limit();
  // The wall time includes reading the first events: decoding is part of a replay's cost.
  // The schedule's clock starts later, at the first op, so decoding makes no op late.
  const uint64_t wall_start = monotonic_ns();
  shared_.start_tick = latency_clock::get().now();
  auto events = reader_.events();
  event e;
  const bool any = next(events, e);
  const bool single = reader_.thread_count() <= 1;
  std::unique_ptr<op_batches> ahead;
  if (any && single && settle_ahead_possible(opt_)) ahead = std::make_unique<op_batches>();
  clock_ = schedule_clock(opt_.timing, any ? e.ts : 0);
  clock_.start(monotonic_ns());
  last_progress_ = clock_.start_ns();
  total_.timed = clock_.timed();
  if (any) {
    if (single)
      run_single(events, e, ahead.get());
    else
      run_lanes(events, e);
  }
  total_.wall_ns = monotonic_ns() - wall_start;
  total_.flow = flow_.stats();
  shared_.handles.close_all();
  total_.stopped = shared_.stop_reason();
  return std::move(total_);
}

}  // namespace

replay_stats replay_events(trace_reader& trace, const target_root& target, const data_source& data,
                           const engine_options& options) {
  dispatcher d(trace, target, data, options);
  return d.run();
}

}  // namespace fsrr
