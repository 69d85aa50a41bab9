#include "engine.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <deque>
#include <memory>
#include <thread>

#include <fmt/format.h>

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

bool paced(op k) {
  const op_class c = info(k).cls;
  return c != op_class::process && c != op_class::unreplayable;
}

// Waits for the op's turn (other threads, then the clock), issues it and counts it.
void execute(const work_item& w, op_runner& runner, thread_schedule& sched,
             const schedule_clock& clock, replay_stats& stats, replay_shared& s) {
  if (w.deps.size()) w.deps.wait(s.stop);
  if (s.stop.load(std::memory_order_relaxed)) return;
  if (clock.timed() && paced(w.ev.kind)) {
    if (const uint64_t due = sched.due(w.ev)) {
      const uint64_t now = wait_until(due, clock.options().spin_ns, s.stop);
      stats.lateness.record(now > due ? now - due : 0);
    }
  }
  runner.run(w);
  if (clock.options().mode == timing_mode::think) sched.finished(w.ev, monotonic_ns());
}

// One recorded thread's replay thread and the queue that feeds it.
struct lane {
  int32_t tid = 0;
  progress_counter done;       // ops finished; also how far the queue has been consumed
  progress_counter published;  // ops handed out
  std::unique_ptr<work_item[]> ring;
  uint32_t mask = 0;
  uint32_t tail = 0;  // dispatcher's copy of `published`
  bool running = false;
  std::atomic<bool> exited{false};
  std::thread thread;
  replay_stats stats;
};

class dispatcher {
 public:
  dispatcher(trace_reader& r, const target_root& t, const data_source& d, const engine_options& o);
  replay_stats run();

 private:
  void prepare(work_item& w, const event& e);
  size_t order_keys(const work_item& w, uint64_t* keys) const;
  bool next(trace_reader::event_stream& events, event& e);
  void maybe_progress(uint64_t ts);
  void run_inline(trace_reader::event_stream& events, event e);
  void run_lanes(trace_reader::event_stream& events, event e);
  void dispatch_all(trace_reader::event_stream& events, event e, uint64_t* keys);
  lane& lane_for(thread_id t);
  work_item& reserve(lane& l, bool obey_stop);
  void push(lane& l);
  void start(lane& l);
  void finish(lane& l);
  void reap(bool all);
  void recycle();

  trace_reader& reader_;
  const engine_options& opt_;
  replay_shared shared_;
  fd_map fds_;
  path_cache paths_;
  schedule_clock clock_;
  replay_stats total_;
  uint64_t seq_ = 0;
  uint64_t events_total_ = 0, first_ts_ = 0, last_ts_ = 0, last_progress_ = 0;
  size_t string_count_ = 0;

  order_tracker order_;
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
      paths_(r, t),
      clock_(o.timing, 0),
      lanes_(r.thread_count() + 1) {
  shared_.strict = o.strict;
  shared_.listed_mismatches = o.listed_mismatches;
  string_count_ = r.string_count();
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
  shared_.handles.ensure(fds_.handle_capacity());
  w.p1 = has(e.kind, F_PATH) ? paths_.get(e.path) : nullptr;
  w.p2 = has(e.kind, F_PATH2) ? paths_.get(e.path2) : nullptr;
  const op_class cls = info(e.kind).cls;
  const bool named = e.kind == op::symlink || e.kind == op::symlinkat || cls == op_class::xattr;
  w.text = named && has(e.kind, F_AUX) && e.aux != 0 && e.aux <= string_count_
               ? &reader_.string(static_cast<string_id>(e.aux))
               : nullptr;
  w.ftype = e.file ? reader_.file(e.file).type & S_IFMT : 0;
  const bool renames = e.kind == op::rename || e.kind == op::renameat || e.kind == op::renameat2;
  w.dir_change = e.kind == op::rmdir || (e.kind == op::unlinkat && (e.flags & AT_REMOVEDIR)) ||
                 (renames && (w.ftype == 0 || S_ISDIR(w.ftype) || (e.flags & RENAME_EXCHANGE)));
}

// The files, paths (and their parent directories) and open files the op touches.
size_t dispatcher::order_keys(const work_item& w, uint64_t* keys) const {
  size_t n = 0;
  auto add = [&](uint64_t k) {
    if ((k & 0xffffffffu) == 0) return;
    for (size_t i = 0; i < n; ++i)
      if ((keys[i] & ~order_all) == (k & ~order_all)) {
        keys[i] |= k & order_all;
        return;
      }
    keys[n++] = k;
  };
  const event& e = w.ev;
  add(order_key(order_kind::file, e.file));
  add(order_key(order_kind::file, e.file2));
  for (const resolved_path* p : {w.p1, w.p2})
    if (p) add(order_key(order_kind::path, p->parent));
  if (w.p1) add(order_key(order_kind::path, e.path));
  if (w.p2) add(order_key(order_kind::path, e.path2));
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
    return events.next(e);
  } catch (const trace_error& err) {
    shared_.request_stop(fmt::format("trace: {}", err.what()));
    return false;
  }
}

void dispatcher::maybe_progress(uint64_t ts) {
  if (!opt_.progress || (seq_ & 1023) != 0) return;
  const uint64_t now = monotonic_ns();
  if (now - last_progress_ < 200'000'000) return;
  last_progress_ = now;
  engine_progress p;
  p.events_done = seq_;
  p.events_total = events_total_;
  p.elapsed_ns = now - clock_.start_ns();
  if (clock_.timed() && last_ts_ > ts)
    p.eta_ns = clock_.scaled(last_ts_ - ts);
  else if (seq_ && events_total_ > seq_)
    p.eta_ns = static_cast<uint64_t>(static_cast<double>(p.elapsed_ns) *
                                     static_cast<double>(events_total_ - seq_) /
                                     static_cast<double>(seq_));
  opt_.progress(p);
}

// One recorded thread: no queues, no ordering, every op issued from this thread.
void dispatcher::run_inline(trace_reader::event_stream& events, event e) {
  op_runner runner(shared_, total_, reader_.thread_count() ? reader_.thread(e.thread).tid : 0);
  thread_schedule sched(clock_);
  work_item w;
  total_.threads = 1;
  do {
    prepare(w, e);
    execute(w, runner, sched, clock_, total_, shared_);
    runner.release(w);
    for (const handle_id h : w.fx.released) fds_.recycle(h);
    maybe_progress(e.ts);
  } while (next(events, e));
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
  if (!l.ring) {
    size_t depth = 16;
    while (depth < opt_.queue_depth) depth *= 2;
    l.ring = std::make_unique<work_item[]>(depth);
    l.mask = static_cast<uint32_t>(depth - 1);
  }
  l.exited = false;
  l.running = true;
  const uint32_t head = l.tail;
  l.thread = std::thread([this, &l, head] {
    ::prctl(PR_SET_TIMERSLACK, 1UL);
    op_runner runner(shared_, l.stats, l.tid);
    thread_schedule sched(clock_);
    for (uint32_t at = head;; ++at) {
      l.published.wait(at + 1, never_);
      const work_item& w = l.ring[at & l.mask];
      if (w.end) {
        l.done.advance();
        break;
      }
      execute(w, runner, sched, clock_, l.stats, shared_);
      runner.release(w);
      l.done.advance();
    }
    l.exited.store(true, std::memory_order_release);
  });
}

work_item& dispatcher::reserve(lane& l, bool obey_stop) {
  const uint32_t depth = l.mask + 1;
  // When full, wait until half is done: one wake-up per half queue, not per op.
  if (l.tail - l.done.value.load(std::memory_order_acquire) >= depth)
    l.done.wait(l.tail - depth / 2, obey_stop ? shared_.stop : never_);
  return l.ring[l.tail & l.mask];
}

// Hands the op just written to the lane at once: another lane may be waiting for it.
void dispatcher::push(lane& l) {
  ++l.tail;
  l.published.advance();
}

void dispatcher::finish(lane& l) {
  if (!l.running) return;
  work_item& w = reserve(l, false);
  w.end = true;
  w.fx.clear();
  w.deps.clear();
  push(l);
  l.running = false;
  ending_.push_back(&l);
}

void dispatcher::reap(bool all) {
  std::erase_if(ending_, [&](lane* l) {
    if (!all && !l->exited.load(std::memory_order_acquire)) return false;
    l->thread.join();
    total_.merge(l->stats, opt_.listed_mismatches);
    l->stats = replay_stats{};
    if (!l->running) l->ring.reset();
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
  do {
    lane& l = lane_for(e.thread);
    if (!l.running) start(l);
    work_item& w = reserve(l, true);
    if (shared_.stop.load(std::memory_order_relaxed)) break;
    prepare(w, e);
    w.deps.clear();
    order_.add(&l.done, l.tail, e.ts, e.ts + e.dur, {keys, order_keys(w, keys)}, w.deps);
    for (const handle_id h : w.fx.released) recycle_.push_back({h, &l.done, l.tail + 1});
    push(l);
    if (e.kind == op::exit) finish(l);
    if ((seq_ & 255) == 0) {
      recycle();
      reap(false);
    }
    maybe_progress(e.ts);
  } while (next(events, e));
}

replay_stats dispatcher::run() {
  raise_fd_limit();
  auto events = reader_.events();
  event e;
  const bool any = next(events, e);
  clock_ = schedule_clock(opt_.timing, any ? e.ts : 0);
  clock_.start(monotonic_ns());
  last_progress_ = clock_.start_ns();
  total_.timed = clock_.timed();
  if (any) {
    // One recorded thread: inline. Handing its ops to a second thread measured slower (the
    // handoffs cost more than the decoding they would overlap).
    if (reader_.thread_count() <= 1)
      run_inline(events, e);
    else
      run_lanes(events, e);
  }
  total_.wall_ns = monotonic_ns() - clock_.start_ns();
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
