// The replay engine: the dispatcher's own work (each event made a work item, its ordering
// keys, progress) and the run, which picks how ops reach their threads (engine_single.cc,
// engine_lanes.cc).
#include "engine_dispatcher.h"

#include <fmt/format.h>

namespace fsrr::engine_detail {

const std::atomic<bool> dispatcher::never_{false};

namespace {

void raise_fd_limit() {
  rlimit r;
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

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
    if (due && !runner.idle()) {
      // Nothing queued waits with it; before a longer wait, what is in flight completes (other
      // lanes may wait for this one's ops).
      if (due > monotonic_ns() + 1'000'000)
        runner.settle_all();
      else
        runner.flush_requests();
    }
    if (due)
      issued =
          wait_until(due, clock.options().spin_ns, s.stop, sched.short_spin_ns(), sched.yields());
  }
  if (deps && deps->size() && !deps->reached()) {
    // Another process's op: the link (peers.h) polls for its word while someone waits.
    runner.settle_all();  // what the other lanes wait for may be this one's requests
    const bool remote = deps->waits_remote();
    if (remote) {
      ++stats.remote_waits;
      s.remote_waiters.fetch_add(1, std::memory_order_relaxed);
    }
    // In a timed replay the op waited for was due earlier and ends any moment: a thread woken
    // from a futex would be tens of microseconds late.
    deps->wait(s.stop, clock.timed() ? clock.options().spin_ns : 0);
    if (remote) s.remote_waiters.fetch_sub(1, std::memory_order_relaxed);
    if (s.stop.load(std::memory_order_relaxed)) return;  // never ahead of what it waited for
    cpu_seat::take();  // the wait may have slept, and woken on a CPU another lane claims
    if (due) issued = monotonic_ns();
  }
  if (due && issued_op(w.ev.kind)) stats.lateness.record(issued > due ? issued - due : 0);
  const uint64_t took = runner.run(w);
  if (due && issued_op(w.ev.kind)) stats.op_bound_lateness.record(sched.op_bound(due, took));
  // The end of the op on the schedule's clock, from the wait's last reading and the latency.
  if (clock.options().mode == timing_mode::think)
    sched.finished(w.ev, issued ? issued + took : monotonic_ns());
}


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
      paths_(r, t, o.path_generation),
      clock_(o.timing, 0),
      spread_(o.spread && o.timing.mode != timing_mode::afap && !o.realtime),
      lanes_(r.thread_count() + 1),
      peers_(o.peers) {
  shared_.trace = &r;
  shared_.strict = o.strict;
  shared_.issue_all = o.issue_all;
  shared_.same_engines = o.same_engines;
  shared_.mmap_as_write = o.mmap_as_write;
  shared_.timed = o.timing.mode != timing_mode::afap;
  shared_.privilege = o.privilege;
  shared_.listed_mismatches = o.listed_mismatches;
  shared_.after_point = o.after_point ? &o.after_point : nullptr;
  shared_.crash_point = o.crash_point ? &o.crash_point : nullptr;
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

// A splice moves bytes between a pipe and a file, and the replay follows no pipe: it replays
// the file's side, the read or the write of as many bytes as the call moved, where the call
// moved them (at the fd's position, which the call moved, for a NULL offset), through the
// engine that submitted it. The file's side is the one the trace names a file on (a pipe has
// none); two pipes, or a failed call, stay a splice, which the replay does not issue.
void dispatcher::splice_side(work_item& w) const {
  event& e = w.ev;
  const bool in = e.file != no_id && e.file2 == no_id && w.fx.h1;
  const bool out = e.file2 != no_id && e.file == no_id && w.fx.h2;
  if ((!in && !out) || e.result < 0) return;
  const auto n = static_cast<uint64_t>(e.result);
  const bool at_pos = in ? w.fx.pos1 : w.fx.pos2;
  const handle_id h = in ? w.fx.h1 : w.fx.h2;
  int64_t at = in ? e.offset : e.offset2;
  if (at_pos) {
    const uint64_t pos = fds_.handle(h).pos;  // moved past the call's bytes already
    at = static_cast<int64_t>(pos >= n ? pos - n : 0);
  }
  if (out) {
    e.fd = e.fd2;
    e.file = e.file2;
  }
  e.kind = in ? (at_pos ? op::read : op::pread64) : (at_pos ? op::write : op::pwrite64);
  e.offset = at;
  e.size = n;
  e.fd2 = -1;
  e.file2 = no_id;
  e.offset2 = 0;
  e.flags = 0;  // SPLICE_F_*: not a read's or write's
  w.fx.h1 = h;
  w.fx.h2 = no_handle;
  w.fx.pos1 = w.fx.pos2 = false;
  w.spliced = true;
}

void dispatcher::prepare(work_item& w, const event& e) {
  w.ev = e;
  w.seq = seq_++;
  w.end = false;
  w.spliced = false;
  fds_.apply(e, w.fx);
  flow_.apply(e, w.fx, fds_, &w.sources);
  if (e.kind == op::splice) splice_side(w);
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
        keys[i] = (keys[i] & ~order_marks) | ((keys[i] | k) & (order_all | order_race)) |
                  (keys[i] & k & order_shared);
        return;
      }
    keys[n++] = k;
  };
  const event& e = w.ev;
  add(order_key(order_kind::file, e.file));
  add(order_key(order_kind::file, e.file2));
  for (const resolved_path* p : {w.p1, w.p2})
    if (p) add(order_key(order_kind::path, p->parent) | order_shared);
  // An op that found its name taken (EEXIST) lost a race to the op that made the name, which
  // may have overlapped it in the recording: it waits for every earlier op on its names
  // themselves (not on names in them: mkdir -p meets EEXIST on every parent). Only the race
  // the winner started first is kept so; a loser that started first is earlier in the trace,
  // and no op waits for a later one.
  const uint64_t lost = e.result == -EEXIST ? order_race : 0;
  if (w.p1) add(order_key(order_kind::path, e.path) | lost);
  if (w.p2) add(order_key(order_kind::path, e.path2) | lost);
  // A directory's listing depends on every name in it.
  if (info(e.kind).cls == op_class::dir && w.fx.h1)
    add(order_key(order_kind::path, fds_.handle(w.fx.h1).path));
  add(order_key(order_kind::handle, w.fx.h1));
  add(order_key(order_kind::handle, w.fx.h2));
  for (size_t i = 0; i < w.fx.released.size() && n < 15; ++i)
    add(order_key(order_kind::handle, w.fx.released[i]) | order_all);
  if (opt_.recorded_order) add(order_key(order_kind::replay, 1));
  return n;
}

bool dispatcher::next(trace_reader::event_stream& events, event& e) {
  if (shared_.stop.load(std::memory_order_relaxed)) return false;
  if (opt_.cancel && opt_.cancel->load(std::memory_order_relaxed)) {
    shared_.request_stop("interrupted");
    return false;
  }
  // Bytes through pipes and sockets are not replayed: they only tell the data flow where the
  // bytes written from them came from.
  while (events.next(e)) {
    if (info(e.kind).cls != op_class::stream) return true;
    flow_.apply(e, {}, fds_);
  }
  if (const auto damage = events.status(); !damage)
    shared_.request_stop(fmt::format("trace: {}", damage.error().message));
  return false;
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

void dispatcher::recycle() {
  while (!recycle_.empty() && recycle_.front().lane->reached(recycle_.front().count)) {
    fds_.recycle(recycle_.front().h);
    recycle_.pop_front();
  }
}

replay_stats dispatcher::run(replay_loop loop) {
  raise_fd_limit();
  // The wall time includes reading the first events: decoding is part of a replay's cost.
  // The schedule's clock starts later, at the first op, so decoding makes no op late.
  uint64_t wall_start = monotonic_ns();
  auto events = reader_.events();
  event e;
  const bool any = next(events, e);
  std::unique_ptr<op_batches> ahead;
  if (any && loop == replay_loop::settled_ahead) ahead = std::make_unique<op_batches>();
  clock_ = schedule_clock(opt_.timing, any ? e.ts : 0);
  if (peers_) {
    const uint64_t at = peers_->start_instant();
    peers_->begin(shared_);
    const uint64_t started = wait_until(at, opt_.start_spin_ns, shared_.stop);
    total_.started_ns = started;
    wall_start = started;
    clock_.start(at);
  } else {
    clock_.start(monotonic_ns());
  }
  // The timeline's 0 too: its slices are then the recorded time's, whatever the first
  // decoding and allocations took (25 ms once on a busy machine, which moved an op a slice).
  shared_.start_tick = latency_clock::get().now();
  last_progress_ = clock_.start_ns();
  total_.timed = clock_.timed();
  if (any) {
    if (loop == replay_loop::lanes)
      run_lanes(events, e);
    else
      run_single(events, e, ahead.get());
  }
  total_.wall_ns = monotonic_ns() - wall_start;
  // The others may still wait for this process's word (or it for theirs) until all are done.
  if (peers_) peers_->end();
  total_.flow = flow_.stats();
  shared_.handles.close_all();
  total_.stopped = shared_.stop_reason();
  return std::move(total_);
}

}  // namespace fsrr::engine_detail

namespace fsrr {

std::string_view name(replay_loop loop) {
  switch (loop) {
    case replay_loop::inline_single: return "inline";
    case replay_loop::settled_ahead: return "settled-ahead";
    case replay_loop::lanes: return "lanes";
  }
  return "?";
}

replay_loop choose_loop(const trace_reader& trace, const engine_options& options) {
  // One recorded thread, issued elsewhere: its ops are settled here as another's, in a lane.
  const bool single =
      trace.thread_count() <= 1 && (!options.peers || options.peers->issues(1));
  if (!single) return replay_loop::lanes;
  // Settling ops on a helper thread pays only where it can run beside the replay thread.
  cpu_set_t cpus;
  const bool second_cpu =
      ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
  return options.decode_ahead && second_cpu ? replay_loop::settled_ahead
                                            : replay_loop::inline_single;
}

replay_stats replay_events(trace_reader& trace, const target_root& target, const data_source& data,
                           const engine_options& options, replay_loop loop) {
  // The single-thread loops cannot take a trace of several threads (or one issued elsewhere).
  if (choose_loop(trace, options) == replay_loop::lanes) loop = replay_loop::lanes;
  engine_detail::dispatcher d(trace, target, data, options);
  replay_stats stats = d.run(loop);
  stats.backend = name(loop);
  return stats;
}

replay_stats replay_events(trace_reader& trace, const target_root& target, const data_source& data,
                           const engine_options& options) {
  return replay_events(trace, target, data, options, choose_loop(trace, options));
}

}  // namespace fsrr
