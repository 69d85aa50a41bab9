// Several recorded threads: a replay thread (lane) per recorded thread, fed through its queue,
// each op waiting for the ops of other lanes it depends on (ordering.h); faithful timing holds
// ops back until shortly before they are due.
#include "engine_dispatcher.h"

#include <fmt/format.h>

namespace fsrr::engine_detail {

void dispatcher::run_lanes(trace_reader::event_stream& events, event e) {
  const batch_policy batch(!clock_.timed());
  // Below its lanes: it works tens of milliseconds ahead of them, they issue what is due.
  const realtime_policy rt(opt_.realtime && clock_.timed(), realtime_dispatcher);
  if (rt.active()) ++total_.realtime_threads;
  // Handing out ops, it is one more thread on a CPU: the lanes move off it as off one another.
  // It claims the CPU it runs on at each op (dispatch_all) and gives it up where it waits.
  const cpu_seat seat(&spread_, false);
  uint64_t keys[24];
  try {
    dispatch_all(events, e, keys);
  } catch (const std::exception& err) {  // std::bad_alloc, a thread that cannot start
    shared_.request_stop(err.what());
  }
  cpu_seat::leave();  // it waits for the lanes to end from here
  for (auto& l : lanes_)
    if (l) finish(*l);
  reap(true);
  total_.spread_threads = spread_.seated();
  total_.cpu_moves = spread_.moves();
}

void dispatcher::dispatch_all(trace_reader::event_stream& events, event e, uint64_t* keys) {
  const bool faithful = clock_.options().mode == timing_mode::faithful;
  do {
    if (faithful) hold_back(e);
    cpu_seat::take();
    lane& l = lane_for(e.thread);
    if (l.remote) {
      settle_remote(l, e, keys);
    } else {
      if (!l.running) start(l);
      lane::queued& q = reserve(l, true);
      if (shared_.stop.load(std::memory_order_relaxed)) break;
      prepare(q.w, e);
      q.deps.clear();
      const uint32_t index = l.q.tail();
      const size_t n = order_keys(q.w, keys);
      order_.add(&l.q.done, index, e.ts, e.ts + e.dur, {keys, n}, q.deps);
      q.watchers = peers_ ? peers_->watchers({keys, n}) : 0;
      for (const handle_id h : q.w.fx.released) recycle_.push_back({h, &l.q.done, index + 1});
      push(l);
      if (e.kind == op::exit) finish(l);
    }
    if ((seq_ & 255) == 0) {
      recycle();
      reap(false);
      retire_paths();
    }
    maybe_progress(seq_, e.ts);
  } while (next(events, e));
}

// An op another process issues: its fd-table and data-flow side settled as everywhere, its
// place in the ordering of the keys local threads share with it, numbered as its owner's queue
// numbers it. Its open file descriptions are its owner's alone (mpi/rank_plan.h keeps the
// processes that share one together), so its handle keys stay out of the ordering here and the
// handles it drops are free again at once: no op here ever used them.
void dispatcher::settle_remote(lane& l, const event& e, uint64_t* keys) {
  work_item& w = remote_item_;
  prepare(w, e);
  size_t n = order_keys(w, keys);
  n = static_cast<size_t>(
      std::remove_if(keys, keys + n,
                     [&](uint64_t k) { return !peers_->touched_here(k & ~order_marks); }) -
      keys);
  const uint32_t index = l.remote_tail++;
  if (n) {
    remote_deps_.clear();
    order_.add(l.remote, index, e.ts, e.ts + e.dur, {keys, n}, remote_deps_);
  }
  for (const handle_id h : w.fx.released) fds_.recycle(h);
  if (e.kind == op::exit) ++l.remote_tail;  // the end mark its owner queues after an exit
}

// Between two ops, every op that may refer to the current path generation is queued: it is
// freed once each lane has finished the ops it holds now.
void dispatcher::retire_paths() {
  if (!paths_.full()) return paths_.collect();
  std::vector<dependency> until;
  for (const auto& l : lanes_)
    if (l && !l->remote && !l->q.done.reached(l->q.tail()))
      until.push_back({&l->q.done, l->q.tail()});
  paths_.retire(std::move(until));
}

lane& dispatcher::lane_for(thread_id t) {
  if (t >= lanes_.size()) lanes_.resize(t + 1);
  if (!lanes_[t]) {
    lanes_[t] = std::make_unique<lane>();
    lanes_[t]->tid = reader_.thread(t).tid;
    lanes_[t]->host = host_name(reader_.header(), reader_.thread(t).host);
    lanes_[t]->id = t;
    if (peers_ && !peers_->issues(t))
      lanes_[t]->remote = &peers_->remote_progress(t);
    else
      ++total_.threads;
  }
  return *lanes_[t];
}

void dispatcher::start(lane& l) {
  if (l.thread.joinable()) {  // events after the thread's exit: the old replay thread goes first
    cpu_seat::leave();
    l.thread.join();
    std::erase(ending_, &l);
    total_.merge(l.stats, opt_.listed_mismatches);
    l.stats = replay_stats{};
  }
  l.exited = false;
  l.running = true;
  ++live_lanes_;
  const replay_thread_name name(l.tid);
  // The lane is made with a short slice, which it keeps (lane_loop): even its first wake-up
  // does not wait out another thread's slice. The dispatcher keeps its own, longer one, so
  // that a woken lane preempts it at once.
  const short_slice made_with(clock_.timed());
  l.thread = std::thread(&dispatcher::lane_loop, this, std::ref(l), l.q.start());
}

void dispatcher::lane_loop(lane& l, lane_queue<lane::queued>::cursor at) {
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  const batch_policy batch(!clock_.timed());
  const realtime_policy rt(opt_.realtime && clock_.timed(), realtime_issuer);
  if (rt.active()) ++l.stats.realtime_threads;
  const short_slice slice(clock_.timed() && !rt.active());
  if (slice.active()) ++l.stats.short_slice_threads;
  // A real-time thread waiting for its CPU is moved to one running ordinary threads at once.
  const cpu_seat seat(rt.active() ? nullptr : &spread_);
  {
    op_runner runner(shared_, l.stats, l.tid, l.host);
    if (::unshare(CLONE_FS) == 0) runner.own_working_directory();
    thread_schedule sched(clock_, rt.active());
    runner.acknowledge_to(&l.q.done);
    for (;;) {
      // Requests in flight complete before the lane sleeps: others may wait for them.
      if (!runner.idle() && !l.q.ready(at)) runner.settle_all();
      const lane::queued& q = l.q.next(at, never_);
      if (q.w.end) {
        runner.settle_all();
        l.q.moved_on(at);
        runner.op_finished();
        break;
      }
      execute(q.w, &q.deps, runner, sched, clock_, l.stats, shared_);
      runner.release(q.w);
      const uint64_t watchers = q.watchers;
      if (watchers) runner.settle_all();  // another process's op waits for this one's end
      l.q.moved_on(at);
      runner.op_finished();
      if (watchers) peers_->finished(l.id, at.at, watchers);
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

}  // namespace fsrr::engine_detail
