#include "merge.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "hash.h"
#include "rewrite.h"

namespace fsrr::transform {

uint64_t clock_line::at(uint64_t t) const {
  const int64_t v = offset + static_cast<int64_t>(t) + std::llround(static_cast<double>(t) * drift);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

clock_line realtime_line(uint64_t base_mono, int64_t base_real,
                         const std::vector<std::pair<uint64_t, int64_t>>& pairs) {
  // Points relative to the trace's own pair: small enough for doubles to hold them exactly.
  std::vector<std::pair<double, double>> pts{{0.0, 0.0}};
  for (const auto& [mono, real] : pairs)
    pts.emplace_back(static_cast<double>(static_cast<int64_t>(mono - base_mono)),
                     static_cast<double>(real - base_real));
  double mx = 0, my = 0;
  for (const auto& [x, y] : pts) mx += x, my += y;
  mx /= static_cast<double>(pts.size());
  my /= static_cast<double>(pts.size());
  double sxx = 0, sxy = 0, lo = pts[0].first, hi = pts[0].first;
  for (const auto& [x, y] : pts) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  clock_line l;
  l.offset = base_real;
  // A slope needs pairs a second apart at least; one further than 0.1% from 1 is a clock that
  // was set, not one that drifts: then the trace's own pair places it.
  if (pts.size() >= 2 && hi - lo >= 1e9 && sxx > 0) {
    const double rate = sxy / sxx;
    if (std::abs(rate - 1.0) <= 1e-3) {
      l.drift = rate - 1.0;
      l.offset = base_real + std::llround(my - rate * mx);
    }
  }
  return l;
}

namespace {

constexpr uint64_t never = std::numeric_limits<uint64_t>::max();
// How far two hosts' clocks may disagree when merge decides which of two events came first:
// NTP keeps hosts within a few milliseconds. On one host the clock is one and exact.
constexpr uint64_t clock_slack_ns = 10'000'000;

uint64_t plus_slack(uint64_t ts) { return ts > never - clock_slack_ns ? never : ts + clock_slack_ns; }

// Paths of all inputs, hashed by where they are placed in the output: the same placed path of
// two inputs has the same hash. Keyed by a random seed, so that a trace cannot choose names
// that collide.
class path_hasher {
 public:
  path_hasher(trace_reader& r, uint64_t seed, const std::vector<uint32_t>& out_roots)
      : r_(r), seed_(seed), roots_(out_roots), hash_(r.path_count() + 1, 0) {}

  uint64_t operator()(path_id p) {
    if (p == no_id || p >= hash_.size()) return 0;
    if (hash_[p]) return hash_[p];
    std::vector<path_id> chain;  // up to a known one or a top, then down: no recursion
    path_id q = p;
    while (q != no_id && !hash_[q]) {
      chain.push_back(q);
      q = r_.path(q).parent;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const path_entry e = r_.path(*it);
      uint64_t h;
      if (e.parent == no_id) {  // a root's top: the output root it goes to
        const uint32_t in_root = *it == root_path ? 1 : r_.root_of(*it);
        const uint32_t out = in_root >= 1 && in_root <= roots_.size() ? roots_[in_root - 1] : 1;
        h = mix64(seed_, out);
      } else {
        h = mix64(hash_[e.parent], name_hash(e.name));
      }
      hash_[*it] = h ? h : 1;  // 0 means "not yet"
    }
    return hash_[p];
  }

 private:
  uint64_t name_hash(std::string_view s) const {
    uint64_t h = mix64(seed_ ^ s.size());
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = mix64(h ^ w);
    }
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    return mix64(h ^ w ^ 0x80);
  }

  trace_reader& r_;
  uint64_t seed_;
  const std::vector<uint32_t>& roots_;
  std::vector<uint64_t> hash_;
};

struct created_path {
  uint64_t ts = never;  // on the output's clock
  file_id file = no_id;
};

// What merging needs to know of one input before anything is written.
struct input {
  trace_reader* r = nullptr;
  std::string name;
  clock_line clock;
  rewrite_placement place;
  std::unique_ptr<path_hasher> hash;
  std::unordered_map<uint64_t, uint32_t> tree_at;  // placed path hash -> tree index
  std::unordered_map<file_id, uint32_t> tree_file;  // file id of a tree entry -> tree index
  std::vector<uint64_t> first_use, first_change;    // by tree index, output clock
  std::unordered_map<uint64_t, created_path> created;  // paths it makes that its tree lacks
  std::vector<bool> dropped;                            // by tree index
  uint32_t max_fd_table = 0, max_link_group = 0;
  uint16_t hosts = 1;
};

bool creates(const event& e) {
  if (e.result < 0) return false;
  switch (e.kind) {
    case op::open:
    case op::openat:
    case op::openat2:
      return e.flags & O_CREAT;
    case op::creat:
    case op::mkdir:
    case op::mkdirat:
    case op::mknod:
    case op::mknodat:
    case op::symlink:
    case op::symlinkat:
    case op::link:
    case op::linkat:
    case op::rename:
    case op::renameat:
    case op::renameat2:
      return true;
    default:
      return false;
  }
}

// The path an op that creates makes: the second for link and rename.
path_id made_path(const event& e) {
  return has(e.kind, F_PATH2) ? e.path2 : e.path;
}

// One pass over an input's events: where its tree's paths are first used and first changed,
// which paths it creates, the fd table ids it uses.
result<void> scan(input& in) {
  trace_reader& r = *in.r;
  const size_t n = r.tree().size();
  in.first_use.assign(n, never);
  in.first_change.assign(n, never);
  in.dropped.assign(n, false);
  for (thread_id t = 1; t <= r.thread_count(); ++t)
    in.max_fd_table = std::max(in.max_fd_table, r.thread(t).fd_table);
  auto use = [&](uint32_t idx, uint64_t ts, bool change) {
    in.first_use[idx] = std::min(in.first_use[idx], ts);
    if (change) in.first_change[idx] = std::min(in.first_change[idx], ts);
  };
  auto by_path = [&](path_id p, uint64_t ts, bool change) {
    if (auto it = in.tree_at.find((*in.hash)(p)); it != in.tree_at.end()) use(it->second, ts, change);
  };
  auto by_file = [&](file_id f, uint64_t ts, bool change) {
    if (f == no_id) return;
    if (auto it = in.tree_file.find(f); it != in.tree_file.end()) use(it->second, ts, change);
  };
  auto events = r.events();
  for (event e; events.next(e);) {
    const uint64_t ts = in.clock.at(e.ts);
    const op_class cls = info(e.kind).cls;
    const bool data_change = cls == op_class::write || cls == op_class::resize ||
                             cls == op_class::copy ||
                             (cls == op_class::open && (e.flags & O_TRUNC));
    const bool name_change = cls == op_class::name;
    if (has(e.kind, F_PATH)) by_path(e.path, ts, name_change || data_change);
    if (has(e.kind, F_PATH2)) by_path(e.path2, ts, name_change);
    if (has(e.kind, F_FILE)) by_file(e.file, ts, data_change);
    if (has(e.kind, F_FILE2)) by_file(e.file2, ts, data_change);
    if (cls == op_class::process && has(e.kind, F_AUX) && e.aux <= UINT32_MAX)
      in.max_fd_table = std::max(in.max_fd_table, static_cast<uint32_t>(e.aux));
    if (creates(e)) {
      const uint64_t h = (*in.hash)(made_path(e));
      if (h && !in.tree_at.count(h)) {
        auto [it, added] = in.created.try_emplace(h);
        if (added) it->second = {ts, has(e.kind, F_FILE) ? e.file : no_id};
      }
    } else if (has(e.kind, F_PATH) && has(e.kind, F_FILE) && e.file != no_id && e.result >= 0 &&
               cls != op_class::name) {
      // the file a mkdir or symlink made, as the next look at its path shows it
      if (auto it = in.created.find((*in.hash)(e.path)); it != in.created.end() && !it->second.file)
        it->second.file = e.file;
    }
  }
  return events.status();
}

const char* type_name(uint32_t mode) {
  return S_ISREG(mode)    ? "a file"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISLNK(mode)  ? "a symlink"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISSOCK(mode) ? "a socket"
                          : "a device";
}

std::string state_text(trace_reader& r, const tree_entry& e) {
  if (S_ISREG(e.mode)) return fmt::format("a file of {} bytes", e.size);
  if (S_ISLNK(e.mode)) return fmt::format("a symlink to '{}'", r.string(e.target));
  return type_name(e.mode);
}

// Whether two inputs' entries of one path can be the same object at the same time.
bool same_state(trace_reader& ra, const tree_entry& a, trace_reader& rb, const tree_entry& b) {
  if ((a.mode & S_IFMT) != (b.mode & S_IFMT)) return false;
  if (S_ISREG(a.mode)) return a.size == b.size;
  if (S_ISLNK(a.mode)) return ra.string(a.target) == rb.string(b.target);
  return true;
}

std::string host_label(const input& in) {
  const header_info& h = in.r->header();
  return fmt::format("{} ({})", in.name, h.hostname.empty() ? "no host name" : h.hostname);
}

uint64_t random_seed() {
  uint64_t s = 0;
  if (::getrandom(&s, sizeof s, 0) != static_cast<ssize_t>(sizeof s))
    s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return s;
}

// A file of one input that is a file of another in the output.
struct file_alias {
  size_t from_input;
  file_id from;
  size_t to_input;
  file_id to;
};

}  // namespace

result<merge_result> merge(const std::vector<trace_reader*>& inputs,
                           const std::vector<std::string>& names, const std::string& out,
                           const merge_options& o) {
  if (inputs.size() < 2) return failure("merge needs two traces or more");
  if (inputs.size() > 4096) return failure("merge takes at most 4,096 traces");
  std::vector<input> in(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    in[i].r = inputs[i];
    in[i].name = i < names.size() ? names[i] : fmt::format("trace {}", i + 1);
  }

  // Refusals first: nothing is written for them.
  std::map<std::string, size_t> ids;
  for (size_t i = 0; i < in.size(); ++i) {
    const header_info& h = in[i].r->header();
    std::vector<std::string> own;  // a merged input's hosts' ids, or its own
    for (const host_info& x : h.hosts) own.push_back(x.trace_id);
    if (h.hosts.empty()) own.push_back(h.trace_id);
    for (const std::string& id : own) {
      if (id.empty()) continue;  // older than format 1.3: no id to tell
      auto [it, added] = ids.try_emplace(id, i);
      if (!added)
        return failure("{} and {} hold the same recording (trace id {}): a trace merges once",
                       in[it->second].name, in[i].name, id);
    }
    if (h.key_id != in[0].r->header().key_id)
      return failure(
          "{} and {} are anonymized with different keys (or one is not): their names do not "
          "match; anonymize both with one --key-file first",
          in[0].name, in[i].name);
    size_t hosts = std::max<size_t>(h.hosts.size(), 1);
    if (hosts > 0xffff) return failure("{}: too many hosts", in[i].name);
    in[i].hosts = static_cast<uint16_t>(hosts);
  }

  // One clock: realtime, from the earliest start.
  for (input& x : in) {
    const header_info& h = x.r->header();
    x.clock = realtime_line(h.clock_monotonic_ns, h.clock_realtime_ns, x.r->clock_pairs());
  }
  const int64_t start =
      std::min_element(in.begin(), in.end(), [](const input& a, const input& b) {
        return a.clock.offset < b.clock.offset;
      })->clock.offset;
  for (input& x : in) x.clock.offset -= start;

  // Roots: every input's first root is the output's first (paths stay as recorded); further
  // roots (chroots, containers) are roots of their own.
  uint32_t out_roots = 1;
  size_t host_base = 0;
  uint32_t fd_base = 0, group_base = 0;
  const uint64_t seed = random_seed();
  for (input& x : in) {
    x.place.roots = {1};
    for (size_t k = 1; k < x.r->roots().size(); ++k) x.place.roots.push_back(++out_roots);
    if (host_base + x.hosts > 0xffff) return failure("merge: more than 65,535 hosts in all");
    x.place.host_base = static_cast<uint16_t>(host_base);
    host_base += x.hosts;
    x.hash = std::make_unique<path_hasher>(*x.r, seed, x.place.roots);
    const tree_table& tree = x.r->tree();
    x.tree_at.reserve(tree.size());
    uint32_t idx = 0;
    for (const tree_entry& e : tree) {
      x.tree_at.emplace((*x.hash)(e.path), idx);
      if (e.file != no_id) x.tree_file.emplace(e.file, idx);
      x.max_link_group = std::max(x.max_link_group, e.link_group);
      ++idx;
    }
    if (auto s = scan(x); !s) return tl::unexpected(s.error());
    x.place.fd_table_base = fd_base;
    x.place.link_group_base = group_base;
    if (fd_base + uint64_t{x.max_fd_table} > UINT32_MAX ||
        group_base + uint64_t{x.max_link_group} > UINT32_MAX)
      return failure("merge: the traces hold more fd tables or hard-link groups than one can");
    fd_base += x.max_fd_table;
    group_base += x.max_link_group;
  }

  // The initial trees united on the merged clock.
  merge_result res;
  std::vector<file_alias> aliases;
  std::unordered_map<uint64_t, std::vector<std::pair<uint32_t, uint32_t>>> shared;
  for (size_t i = 0; i < in.size(); ++i)
    for (const auto& [h, idx] : in[i].tree_at) {
      // created by another input before this one first used it: that input's file
      bool made = false;
      for (size_t k = 0; k < in.size() && !made; ++k) {
        if (k == i) continue;
        const auto c = in[k].created.find(h);
        if (c == in[k].created.end() || c->second.ts > plus_slack(in[i].first_use[idx])) continue;
        made = true;
        in[i].dropped[idx] = true;
        ++res.created;
        const tree_entry e = in[i].r->tree()[idx];
        if (e.file && c->second.file) aliases.push_back({i, e.file, k, c->second.file});
      }
      if (!made) shared[h].emplace_back(static_cast<uint32_t>(i), idx);
    }
  for (auto& [h, members] : shared) {
    if (members.size() < 2) continue;
    // the entry of the input that used the path first stands for all
    auto first = [&](const std::pair<uint32_t, uint32_t>& m) {
      return std::pair{in[m.first].first_use[m.second], m.first};
    };
    std::sort(members.begin(), members.end(),
              [&](const auto& a, const auto& b) { return first(a) < first(b); });
    const auto [ki, kidx] = members[0];
    const tree_entry keep = in[ki].r->tree()[kidx];
    for (size_t m = 1; m < members.size(); ++m) {
      const auto [mi, midx] = members[m];
      const tree_entry e = in[mi].r->tree()[midx];
      if (!same_state(*in[ki].r, keep, *in[mi].r, e)) {
        // explained if another input changed the path before this one first saw it
        bool explained = false;
        for (const auto& [xi, xidx] : members)
          if (xi != mi && in[xi].first_change[xidx] < plus_slack(in[mi].first_use[midx]))
            explained = true;
        if (!explained)
          return failure(
              "merge: {}: two states at once: {} in {}, {} in {}, and no event in the traces "
              "makes the one the other",
              in[ki].r->placed_path(keep.path), state_text(*in[ki].r, keep), host_label(in[ki]),
              state_text(*in[mi].r, e), host_label(in[mi]));
      }
      in[mi].dropped[midx] = true;
      ++res.joined;
      if (e.file && keep.file) aliases.push_back({mi, e.file, ki, keep.file});
    }
  }
  shared.clear();

  // The output.
  header_info h;
  h.writer = "fsrr " FSRR_VERSION;
  h.kind = trace_kind::snapshot;
  h.clock_realtime_ns = start;
  std::string hostnames;
  std::set<std::string> named;
  for (const input& x : in) {
    const header_info& xh = x.r->header();
    if (xh.kind == trace_kind::recording) h.kind = trace_kind::recording;
    if (x.clock.offset == 0 && !h.clock_monotonic_ns) {
      h.clock_monotonic_ns = xh.clock_monotonic_ns;
      h.kernel = xh.kernel;
      h.page_size = xh.page_size;
      h.cpus = xh.cpus;
    }
    std::vector<host_info> hosts = xh.hosts;
    if (hosts.empty())
      hosts.push_back({xh.hostname, xh.kernel, xh.trace_id, xh.command, xh.clock_monotonic_ns,
                       xh.clock_realtime_ns, 0, xh.cpus});
    for (host_info& y : hosts) {
      y.offset_ns = x.clock.at(y.offset_ns);
      if (named.insert(y.name).second) hostnames += (hostnames.empty() ? "" : ",") + y.name;
      h.hosts.push_back(std::move(y));
    }
  }
  h.hostname = hostnames;
  h.key_id = in[0].r->header().key_id;
  h.derived = fmt::format("merge of {} traces", in.size());
  res.hosts = h.hosts.size();

  writer_options wo;
  wo.overwrite = o.force;
  auto created = trace_writer::create(out, h, wo);
  if (!created) return tl::unexpected(created.error());
  trace_writer& w = *created;
  struct abandon_unless_done {
    trace_writer& w;
    bool done = false;
    ~abandon_unless_done() {
      if (!done) w.abandon();
    }
  } guard{w};

  // roots: the first one's description is the first input's
  {
    trace_root r1;
    if (!in[0].r->roots().empty()) {
      r1 = in[0].r->roots()[0];
      r1.where = r1.where ? w.intern_string(in[0].r->string(r1.where)) : no_id;
    }
    w.add_root(r1);
    for (input& x : in)
      for (size_t k = 1; k < x.r->roots().size(); ++k) {
        trace_root r = x.r->roots()[k];
        r.where = r.where ? w.intern_string(x.r->string(r.where)) : no_id;
        w.add_root(r);
      }
  }
  std::vector<trace_rewriter> maps;
  maps.reserve(in.size());
  for (input& x : in) maps.push_back(trace_rewriter::into(*x.r, w, x.place));
  for (const file_alias& a : aliases) maps[a.from_input].alias_file(a.from, maps[a.to_input].file(a.to));

  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t idx = 0;
    for (const tree_entry& e : in[i].r->tree()) {
      if (!in[i].dropped[idx++]) {
        maps[i].add_tree_entry(e);
        ++res.tree;
      }
    }
    // what the input no longer needs before the events: they are read once more
    in[i].tree_at = {};
    in[i].tree_file = {};
    in[i].created = {};
  }

  // Events, merged by their time on the one clock (ties: input order).
  struct head {
    uint64_t ts;
    size_t input;
    bool operator>(const head& o) const { return std::tie(ts, input) > std::tie(o.ts, o.input); }
  };
  std::vector<trace_reader::event_stream> streams;
  std::vector<event> pending(in.size());
  std::priority_queue<head, std::vector<head>, std::greater<>> heads;
  for (size_t i = 0; i < in.size(); ++i) {
    streams.push_back(in[i].r->events());
    if (streams[i].next(pending[i])) heads.push({in[i].clock.at(pending[i].ts), i});
  }
  while (!heads.empty()) {
    const head top = heads.top();
    heads.pop();
    event e = pending[top.input];
    e.ts = top.ts;
    maps[top.input].append(e);
    ++res.events;
    if (streams[top.input].next(pending[top.input]))
      heads.push({in[top.input].clock.at(pending[top.input].ts), top.input});
  }
  for (size_t i = 0; i < in.size(); ++i) {
    if (auto s = streams[i].status(); !s) return tl::unexpected(s.error());
    if (auto s = maps[i].status(); !s) return tl::unexpected(s.error());
    const trace_summary& s = in[i].r->summary();
    if (s.lost_events) w.add_lost(0, s.lost_events);
    for (const auto& [key, n] : s.nonfile) w.add_nonfile(key.first, key.second, n);
    if (s.incomplete) w.mark_incomplete(s.incomplete);
    if (s.pauses || s.paused_ns) w.add_pauses(s.pauses, s.paused_ns);
    if (s.filtered) w.add_filtered(s.filtered);
    res.offsets_ns.push_back(in[i].clock.at(0));
  }
  if (auto done = w.finish(); !done) return tl::unexpected(done.error());
  guard.done = true;
  return res;
}

}  // namespace fsrr::transform
