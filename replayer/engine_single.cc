// A trace of one recorded thread: no queues and no ordering; every op issued from the calling
// thread, and settled a batch ahead on a helper thread where a second CPU allows.
#include "engine_dispatcher.h"

#include <fmt/format.h>

namespace fsrr::engine_detail {

// One recorded thread: no queues, no ordering, every op issued from the calling thread, and
// settled on it too unless a helper thread does that ahead.
void dispatcher::run_single(trace_reader::event_stream& events, const event& first,
                            op_batches* ahead) {
  const bool known = reader_.thread_count() > 0;
  op_runner runner(shared_, total_, known ? reader_.thread(first.thread).tid : 0,
                   known ? host_name(reader_.header(), reader_.thread(first.thread).host) : "");
  const own_working_directory cwd(runner);
  total_.threads = 1;
  // The settling helper stays SCHED_BATCH: it works batches ahead.
  const realtime_policy rt(opt_.realtime && clock_.timed(), realtime_issuer);
  if (rt.active()) total_.realtime_threads = 1;
  const short_slice slice(clock_.timed() && !rt.active());
  if (slice.active()) total_.short_slice_threads = 1;
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
    } catch (const std::exception& err) {  // std::bad_alloc: end cleanly all the same
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
    default_slice();  // not the replay thread's short one, which a woken op could not preempt
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
  paths_.drop_retired();  // their dependencies point into `b`, which goes with the caller
}

void dispatcher::single_inline(trace_reader::event_stream& events, const event& first,
                               op_runner& runner) {
  thread_schedule sched(clock_, total_.realtime_threads != 0, /*alone=*/true);
  work_item w;
  event e = first;
  uint64_t done = 0;
  do {
    prepare(w, e);
    execute(w, nullptr, runner, sched, clock_, total_, shared_);
    runner.release(w);
    runner.op_finished();
    for (const handle_id h : w.fx.released) fds_.recycle(h);
    if (paths_.full()) paths_.retire({});  // nothing holds the op's paths now
    maybe_progress(++done, e.ts);
  } while (next(events, e));
  runner.settle_all();
}

// The replay thread's side: issues the batches in order. Batch 0 holds the first op.
void dispatcher::single_ahead(op_batches& b, op_runner& runner) {
  thread_schedule sched(clock_, total_.realtime_threads != 0, /*alone=*/true);
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
      runner.op_finished();
      maybe_progress(++done, w.ev.ts);
    }
    if (batch.last) {
      if (!batch.error.empty()) shared_.request_stop(batch.error);
      runner.settle_all();
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
    // The current path generation is referred to by batches up to n - 1 alone.
    if (paths_.full()) paths_.retire({{&b.drained, n}});
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

}  // namespace fsrr::engine_detail
