#include "rank_plan.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "fd_map.h"
#include "order_keys.h"

namespace fsrr::mpi {
namespace {

// Processes joined by the open files they share.
class process_groups {
 public:
  uint32_t find(uint32_t p) {
    while (up_[p] != p) p = up_[p] = up_[up_[p]];
    return p;
  }
  void join(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) up_[std::max(a, b)] = std::min(a, b);  // the first process seen leads
  }
  uint32_t add() {
    up_.push_back(static_cast<uint32_t>(up_.size()));
    return up_.back();
  }

 private:
  std::vector<uint32_t> up_;
};

struct unit {
  uint64_t events = 0;
  uint32_t first = 0;  // its lowest index: ties go the same way on every rank
  std::vector<uint32_t> members;
};

// Largest first onto the least-loaded of `ranks` (lowest rank on a tie); returns each unit's.
std::vector<int> balance(const std::vector<unit>& units, int first_rank, int ranks) {
  std::vector<size_t> order(units.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (units[a].events != units[b].events) return units[a].events > units[b].events;
    return units[a].first < units[b].first;
  });
  std::vector<uint64_t> load(static_cast<size_t>(ranks), 0);
  std::vector<int> to(units.size(), first_rank);
  for (const size_t u : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    load[static_cast<size_t>(least)] += units[u].events;
    to[u] = first_rank + static_cast<int>(least);
  }
  return to;
}

std::vector<thread_info> threads_of(trace_reader& r) {
  std::vector<thread_info> v(r.thread_count() + 1);
  for (thread_id t = 1; t < v.size(); ++t) v[t] = r.thread(t);
  return v;
}

// Pass 1: events per thread; processes that share an open file description joined.
result<std::vector<uint64_t>> join_sharers(trace_reader& trace,
                                           const std::vector<thread_info>& threads,
                                           const std::vector<uint32_t>& process_of,
                                           process_groups& groups) {
  std::vector<uint64_t> thread_events(threads.size(), 0);
  fd_map fds(threads);
  std::vector<uint32_t> opened_by;  // by handle: the process that opened it
  fd_effect fx;
  event e;
  auto events = trace.events();
  while (events.next(e)) {
    if (info(e.kind).cls == op_class::stream || e.thread == no_id || e.thread >= threads.size())
      continue;
    ++thread_events[e.thread];
    fds.apply(e, fx);
    if (opened_by.size() < fds.handle_capacity()) opened_by.resize(fds.handle_capacity(), 0);
    const uint32_t p = process_of[e.thread];
    auto use = [&](handle_id h) {
      if (h != no_handle && h < opened_by.size()) groups.join(p, opened_by[h]);
    };
    if (fx.opened)
      opened_by[fx.h1] = p;
    else
      use(fx.h1);
    use(fx.h2);
    for (const handle_id h : fx.released) {
      use(h);
      fds.recycle(h);  // no replay fd behind it here: free at once
    }
  }
  FSRR_TRY(events.status());
  return thread_events;
}

// Each host's first rank and its count: with fewer ranks than hosts, whole hosts balanced over
// the ranks; with more, each host gets ranks in proportion to its events (the largest quotient
// next).
std::vector<std::pair<int, int>> ranks_of_hosts(const std::vector<unit>& hosts, int ranks) {
  std::vector<std::pair<int, int>> host_ranks(hosts.size());
  if (hosts.empty()) return host_ranks;  // a trace without threads: every rank idle
  if (static_cast<size_t>(ranks) <= hosts.size()) {
    const std::vector<int> to = balance(hosts, 0, ranks);
    for (size_t h = 0; h < hosts.size(); ++h) host_ranks[h] = {to[h], 1};
    return host_ranks;
  }
  std::vector<int> count(hosts.size(), 1);
  for (int left = ranks - static_cast<int>(hosts.size()); left > 0; --left) {
    size_t best = 0;
    for (size_t h = 1; h < hosts.size(); ++h)  // events / ranks, compared without division
      if (hosts[h].events * static_cast<uint64_t>(count[best]) >
          hosts[best].events * static_cast<uint64_t>(count[h]))
        best = h;
    ++count[best];
  }
  int next = 0;
  for (size_t h = 0; h < hosts.size(); ++h) {
    host_ranks[h] = {next, count[h]};
    next += count[h];
  }
  return host_ranks;
}

}  // namespace

// Pass 2: which ranks touch each file and path, with the keys the engine orders ops by
// (replayer/engine.cc's order_keys), or more: a rank that touches a key learns of every op on it
// that other ranks issue.
result<void> rank_plan::mark_keys(trace_reader& trace, const std::vector<thread_info>& threads) {
  file_ranks_.assign(trace.file_count() + 1, 0);
  path_ranks_.assign(trace.path_count() + 1, 0);
  fd_map fds(threads);
  fd_effect fx;
  event e;
  auto events = trace.events();
  const size_t paths = trace.path_count();
  while (events.next(e)) {
    if (info(e.kind).cls == op_class::stream || e.thread == no_id || e.thread >= threads.size())
      continue;
    fds.apply(e, fx);
    const uint64_t bit = uint64_t{1} << (rank_of_[e.thread] % 64);
    auto file = [&](file_id f) {
      if (f < file_ranks_.size()) file_ranks_[f] |= bit;
    };
    auto path = [&](path_id p, bool with_parent) {
      if (p == no_id || p > paths || p >= path_ranks_.size()) return;
      path_ranks_[p] |= bit;
      if (!with_parent) return;
      const path_id up = trace.path(p).parent;
      if (up < path_ranks_.size()) path_ranks_[up] |= bit;
    };
    file(e.file);
    file(e.file2);
    if (has(e.kind, F_PATH)) path(e.path, true);
    if (has(e.kind, F_PATH2)) path(e.path2, true);
    if (info(e.kind).cls == op_class::dir && fx.h1) path(fds.handle(fx.h1).path, false);
    for (const handle_id r : fx.released) fds.recycle(r);
  }
  if (auto s = events.status(); !s) return tl::unexpected(s.error());
  return {};
}

result<rank_plan> rank_plan::make(trace_reader& trace, int ranks) {
  if (ranks < 1) return failure("{} ranks: at least one is needed", ranks);
  const std::vector<thread_info> threads = threads_of(trace);
  // Processes: (host, pid as the recorder saw it).
  std::map<std::pair<uint16_t, int32_t>, uint32_t> process_ids;
  process_groups groups;
  std::vector<uint32_t> process_of(threads.size(), 0);
  std::vector<uint16_t> process_host;
  for (thread_id t = 1; t < threads.size(); ++t) {
    const thread_info& ti = threads[t];
    const int32_t pid = ti.host_pid ? ti.host_pid : ti.pid ? ti.pid : ti.tid;
    auto [it, fresh] = process_ids.try_emplace({host_of(ti), pid}, 0);
    if (fresh) {
      it->second = groups.add();
      process_host.push_back(host_of(ti));
    }
    process_of[t] = it->second;
  }

  auto thread_events = join_sharers(trace, threads, process_of, groups);
  if (!thread_events) return tl::unexpected(thread_events.error());

  // Groups, with their events, by host.
  std::map<uint16_t, std::vector<unit>> by_host;
  std::map<uint32_t, std::pair<uint16_t, size_t>> unit_of_group;
  for (thread_id t = 1; t < threads.size(); ++t) {
    const uint32_t g = groups.find(process_of[t]);
    auto [it, fresh] = unit_of_group.try_emplace(g);
    if (fresh) {
      auto& v = by_host[process_host[g]];
      it->second = {process_host[g], v.size()};
      v.push_back({0, t, {}});
    }
    unit& u = by_host[it->second.first][it->second.second];
    u.events += (*thread_events)[t];
    u.members.push_back(t);
  }

  rank_plan plan;
  plan.rank_of_.assign(threads.size(), -1);
  plan.shares_.resize(static_cast<size_t>(ranks));
  // Hosts first: with fewer ranks than hosts, whole hosts are balanced over the ranks; with
  // more, each host gets ranks in proportion to its events (the largest quotient next), then
  // its groups are balanced over those.
  std::vector<unit> hosts;
  std::vector<uint16_t> host_ids;
  for (const auto& [h, units] : by_host) {
    unit whole{0, units.empty() ? 0 : units.front().first, {}};
    for (const unit& u : units) whole.events += u.events;
    hosts.push_back(whole);
    host_ids.push_back(h);
  }
  const std::vector<std::pair<int, int>> host_ranks = ranks_of_hosts(hosts, ranks);
  size_t h = 0;
  for (const auto& [host, units] : by_host) {
    const auto [first, count] = host_ranks[h++];
    const std::vector<int> to = balance(units, first, count);
    for (size_t i = 0; i < units.size(); ++i) {
      rank_share& s = plan.shares_[static_cast<size_t>(to[i])];
      s.events += units[i].events;
      ++s.groups;
      if (std::find(s.hosts.begin(), s.hosts.end(), host) == s.hosts.end()) s.hosts.push_back(host);
      std::vector<uint32_t> procs;
      for (const thread_id t : units[i].members) {
        plan.rank_of_[t] = to[i];
        ++s.threads;
        procs.push_back(process_of[t]);
      }
      std::sort(procs.begin(), procs.end());
      const auto n = static_cast<uint32_t>(std::unique(procs.begin(), procs.end()) - procs.begin());
      s.processes += n;
      plan.kept_together_ += n - 1;
    }
  }

  FSRR_TRY(plan.mark_keys(trace, threads));
  return plan;
}

namespace {

struct plan_writer {
  std::vector<uint8_t> out;
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  template <typename T>
  void put_all(const std::vector<T>& v) {
    put(static_cast<uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(T));
  }
};

struct plan_reader {
  std::span<const uint8_t> in;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (in.size() < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, in.data(), sizeof v);
    in = in.subspan(sizeof v);
    return v;
  }
  template <typename T>
  std::vector<T> get_all(uint64_t at_most, bool exactly = false) {
    const auto n = get<uint64_t>();
    if (!ok || n > at_most || (exactly && n != at_most) || n * sizeof(T) > in.size()) {
      ok = false;
      return {};
    }
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), in.data(), n * sizeof(T));
    in = in.subspan(n * sizeof(T));
    return v;
  }
};

}  // namespace

// The trace it was made from, as its id and event count: a node that finds another trace at
// the same path is refused rather than given a plan that does not fit it.
static std::vector<uint8_t> trace_mark(trace_reader& trace) {
  std::vector<uint8_t> m(trace.header().trace_id.begin(), trace.header().trace_id.end());
  const uint64_t events = trace.summary().events;
  const auto* p = reinterpret_cast<const uint8_t*>(&events);
  m.insert(m.end(), p, p + sizeof events);
  return m;
}

std::vector<uint8_t> rank_plan::to_bytes(trace_reader& trace) const {
  plan_writer w;
  w.put_all(trace_mark(trace));
  w.put(static_cast<uint32_t>(shares_.size()));
  for (const rank_share& s : shares_) {
    w.put(s.events);
    w.put(s.threads);
    w.put(s.processes);
    w.put(s.groups);
    w.put_all(s.hosts);
  }
  w.put(kept_together_);
  w.put_all(rank_of_);
  w.put_all(file_ranks_);
  w.put_all(path_ranks_);
  return std::move(w.out);
}

result<rank_plan> rank_plan::from_bytes(std::span<const uint8_t> bytes, trace_reader& trace,
                                        int ranks) {
  plan_reader r{bytes};
  rank_plan p;
  const std::vector<uint8_t> mark = r.get_all<uint8_t>(4096);
  if (!r.ok || mark != trace_mark(trace))
    return failure("rank 0 read another trace than this rank (its id or event count differs): "
                   "every rank needs the same trace file");
  const auto n = r.get<uint32_t>();
  if (!r.ok || n != static_cast<uint32_t>(ranks)) return failure("rank plan: not for {} ranks", ranks);
  p.shares_.resize(n);
  for (rank_share& s : p.shares_) {
    s.events = r.get<uint64_t>();
    s.threads = r.get<uint32_t>();
    s.processes = r.get<uint32_t>();
    s.groups = r.get<uint32_t>();
    s.hosts = r.get_all<uint16_t>(0xffff);
  }
  p.kept_together_ = r.get<uint32_t>();
  p.rank_of_ = r.get_all<int32_t>(trace.thread_count() + 1, true);
  p.file_ranks_ = r.get_all<uint64_t>(trace.file_count() + 1, true);
  p.path_ranks_ = r.get_all<uint64_t>(trace.path_count() + 1, true);
  if (!r.ok || !r.in.empty()) return failure("rank plan: damaged on its way from rank 0");
  for (const int32_t k : p.rank_of_)
    if (k < -1 || k >= ranks) return failure("rank plan: a thread of rank {}", k);
  return p;
}

uint64_t rank_plan::ranks_of_key(uint64_t key) const {
  const auto id = static_cast<uint32_t>(key);
  switch (static_cast<order_kind>((key & ~order_marks) >> 32)) {
    case order_kind::file:
      return file_ranks(id);
    case order_kind::path:
      return path_ranks(id);
    default:  // an open file description: one rank's alone
      return 0;
  }
}

uint64_t rank_plan::watchers(std::span<const uint64_t> keys, int self) const {
  uint64_t m = 0;
  for (const uint64_t k : keys) m |= ranks_of_key(k);
  // With more than 64 ranks a bit stands for several, this one among them.
  if (ranks() <= 64) m &= ~(uint64_t{1} << (self % 64));
  return m;
}

bool rank_plan::touched_by(uint64_t key, int self) const {
  return ranks_of_key(key) & (uint64_t{1} << (self % 64));
}

}  // namespace fsrr::mpi
