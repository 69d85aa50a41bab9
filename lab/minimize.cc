#include "minimize.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "clock.h"
#include "closure.h"
#include "command.h"
#include "fd_map.h"
#include "made_fs.h"
#include "rewrite.h"
#include "trace_reader.h"

namespace fsrr::lab {
namespace {

// Ops whose length a pass may halve and whose runs it may coalesce: a length, one fd, the
// data at the fd's position (read, write) or at an offset (pread64, pwrite64).
bool plain_data_op(op k) {
  return k == op::read || k == op::write || k == op::pread64 || k == op::pwrite64;
}

constexpr uint64_t max_coalesced = uint64_t{64} << 20;  // well below the replayer's cut

// A candidate: events in trace order (input ids; a pass may have changed their values) and
// the initial tree before the naming filter.
struct candidate {
  std::vector<event> events;
  std::vector<tree_entry> tree;
  unsigned filler_shift = 0;  // the filler holds the unnamed files' bytes >> this
};

// The bytes a candidate moves and holds: data ops' results plus regular files' sizes.
uint64_t bytes_of(const std::vector<event>& events, const std::vector<tree_entry>& tree) {
  uint64_t n = 0;
  for (const event& e : events)
    if ((plain_data_op(e.kind) || e.kind == op::copy_file_range || e.kind == op::sendfile) &&
        e.result > 0)
      n += static_cast<uint64_t>(e.result);
  for (const tree_entry& t : tree)
    if (S_ISREG(t.mode)) n += t.size;
  return n;
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("fsrr");
}

class minimizer {
 public:
  // The trace's threads, events and tree in memory, and a scratch directory for the tries.
  static result<std::unique_ptr<minimizer>> open(const minimize_options& o) {
    result<trace_reader> in = trace_reader::open(o.trace);
    if (!in) return failure(in.error());
    std::unique_ptr<minimizer> m(new minimizer(o, std::move(*in)));
    m->threads_.resize(m->in_.thread_count() + 1);
    for (thread_id t = 1; t < m->threads_.size(); ++t) m->threads_[t] = m->in_.thread(t);
    auto events = m->in_.events();
    for (event e; events.next(e);) m->best_.events.push_back(e);
    FSRR_TRY(events.status());
    m->best_.tree.assign(m->in_.tree().begin(), m->in_.tree().end());
    if (o.scratch.empty()) {
      char dir[] = "/dev/shm/fsrr-minimize.XXXXXX";
      if (!::mkdtemp(dir)) return failure("mkdtemp: {}", std::strerror(errno));
      m->scratch_ = dir;
      m->own_scratch_ = true;
    } else {
      m->scratch_ = o.scratch;
    }
    return m;
  }
  ~minimizer() {
    if (own_scratch_) {
      std::error_code ec;
      std::filesystem::remove_all(scratch_, ec);
    }
  }

  result<minimize_result> run() {
    const uint64_t t0 = monotonic_ns();
    minimize_result r;
    r.events_before = best_.events.size();
    r.tree_before = best_.tree.size();
    r.bytes_before = bytes_of(best_.events, best_.tree);
    {
      const result<std::vector<int>> whole = attempt_all({best_});
      if (!whole) return failure(whole.error());
      if ((*whole)[0] != 0)
        return failure(
            "the predicate does not hold on the whole trace (it exited with {}): nothing to "
            "minimize",
            (*whole)[0]);
      changes_ = 0;
    }
    FSRR_TRY(pass("tree", r, [&] { return tree_pass(); }));
    // coarse to fine: who did it, which thread, on which file, which event
    const char* levels[] = {"processes", "threads", "files", "events"};
    for (int level = 0; level < 4; ++level)
      FSRR_TRY(pass(levels[level], r, [&] { return delete_pass(level); }));
    // then simpler values, and deletion once more where that changed the events
    const size_t events = best_.events.size();
    FSRR_TRY(pass("coalesce", r, [&] { return coalesce_pass(); }));
    FSRR_TRY(pass("merge threads", r, [&] { return merge_threads_pass(); }));
    FSRR_TRY(pass("halve lengths", r, [&] { return halve_pass(false); }));
    FSRR_TRY(pass("halve files", r, [&] { return halve_pass(true); }));
    if (best_.events.size() != events) FSRR_TRY(pass("events", r, [&] { return delete_pass(3); }));
    r.tries = tries_;
    r.exhausted = out_of_tries();
    if (!o_.keep_timing) drop_gaps(best_.events);
    const std::vector<tree_entry> tree = named_tree(best_);
    r.events_after = best_.events.size();
    r.tree_after = tree.size();
    r.bytes_after = bytes_of(best_.events, tree);
    FSRR_TRY(write(best_.events, tree, o_.out, o_.force));
    r.wall_ns = monotonic_ns() - t0;
    return r;
  }

 private:
  bool out_of_tries() const { return tries_ >= o_.max_tries; }
  void say(const std::string& line) const {
    if (!o_.say) return;
    std::lock_guard lock(say_mutex_);
    o_.say(line);
  }

  // Runs `body` as a pass named `name`, noting what it did to the best candidate.
  template <class F>
  result<void> pass(const char* name, minimize_result& r, F body) {
    if (out_of_tries()) return {};
    minimize_pass p;
    p.name = name;
    const std::vector<tree_entry> before = named_tree(best_);
    p.events_before = best_.events.size();
    p.tree_before = before.size();
    p.bytes_before = bytes_of(best_.events, before);
    const unsigned tries = tries_;
    const uint64_t t0 = monotonic_ns();
    FSRR_TRY(body());
    const std::vector<tree_entry> after = named_tree(best_);
    p.events_after = best_.events.size();
    p.tree_after = after.size();
    p.bytes_after = bytes_of(best_.events, after);
    p.tries = tries_ - tries;
    p.wall_ns = monotonic_ns() - t0;
    if (p.tries == 0) return {};
    say(fmt::format("minimize: {}: {} → {} events, {} → {} tree entries, {} tries", name,
                    p.events_before, p.events_after, p.tree_before, p.tree_after, p.tries));
    r.passes.push_back(std::move(p));
    return {};
  }

  // Tries candidates make(0), make(1), ... make(count - 1), `jobs` at a time, each made when
  // its turn comes; takes the first (in order) that holds. Its index, or -1.
  result<long> take_first(size_t count, const std::function<candidate(size_t)>& make) {
    for (size_t at = 0; at < count && !out_of_tries(); at += jobs()) {
      const size_t n = std::min<size_t>({jobs(), count - at, o_.max_tries - tries_});
      std::vector<candidate> batch;
      for (size_t k = 0; k < n; ++k) batch.push_back(make(at + k));
      const result<std::vector<int>> status = attempt_all(batch);
      if (!status) return failure(status.error());
      for (size_t k = 0; k < n; ++k)
        if ((*status)[k] == 0) {
          best_ = std::move(batch[k]);
          ++changes_;
          return static_cast<long>(at + k);
        }
    }
    return -1;
  }
  // One candidate: whether it held (and is the best now).
  result<bool> try_one(const candidate& c) {
    const result<long> k = take_first(1, [&](size_t) { return c; });
    if (!k) return failure(k.error());
    return *k == 0;
  }
  // (one at a time on an existing directory: two tries cannot share it)
  size_t jobs() const { return o_.fs && o_.fs->existing() ? 1 : std::max(1u, o_.jobs); }

  // The events `chosen` picks out of the best candidate's, with what they need of the rest.
  candidate subset(const std::vector<bool>& chosen) const {
    const std::vector<bool> keep = transform::closure(in_, best_.events, threads_, chosen, true);
    candidate c;
    c.tree = best_.tree;
    c.filler_shift = best_.filler_shift;
    for (size_t i = 0; i < keep.size(); ++i)
      if (keep[i]) c.events.push_back(best_.events[i]);
    return c;
  }

  // The tree as a candidate's trace holds it: all of it, or (once pruning held) the entries
  // its events name and the directories on the way; with a filler (where pruning alone lost
  // the predicate: the rest took space it needs taken), one more file, the largest of the
  // rest, that holds all their bytes, so that what a candidate stops naming keeps its space.
  std::vector<tree_entry> named_tree(const candidate& c) const {
    if (!prune_) return c.tree;
    std::vector<uint8_t> named(in_.path_count() + 1, 0);
    const auto name = [&](path_id p) {
      for (; p != no_id && p < named.size() && !named[p]; p = in_.path(p).parent) named[p] = 1;
    };
    std::vector<thread_info> threads = threads_;
    fd_map fds(std::move(threads));
    fd_effect fx;
    for (const event& e : c.events) {
      fds.apply(e, fx);
      if (has(e.kind, F_PATH)) name(e.path);
      if (has(e.kind, F_PATH2)) name(e.path2);
      if (fx.h1) name(fds.handle(fx.h1).path);
      if (fx.h2) name(fds.handle(fx.h2).path);
    }
    const tree_entry* host = nullptr;
    uint64_t bytes = 0;
    if (filler_) {
      // in the directory that held most of those bytes, its largest file
      std::map<path_id, uint64_t> by_dir;
      const auto filler_part = [&](const tree_entry& t) {
        return (t.path >= named.size() || !named[t.path]) && S_ISREG(t.mode) && t.link_group == 0;
      };
      for (const tree_entry& t : c.tree)
        if (filler_part(t)) {
          bytes += t.size;  // (what was allocated is the recording file system's)
          by_dir[in_.path(t.path).parent] += t.size;
        }
      path_id dir = no_id;
      for (const auto& [d, n] : by_dir)
        if (dir == no_id || n > by_dir[dir]) dir = d;
      for (const tree_entry& t : c.tree)
        if (filler_part(t) && in_.path(t.path).parent == dir && (!host || t.size > host->size))
          host = &t;
      if (c.filler_shift >= 64 || (bytes >> c.filler_shift) == 0) host = nullptr;  // no filler
      if (host) name(host->path);
    }
    std::vector<tree_entry> out;
    for (const tree_entry& t : c.tree) {
      if (t.path >= named.size() || !named[t.path]) continue;
      out.push_back(t);
      if (&t == host) {
        out.back().size = out.back().allocated = c.filler_shift < 64 ? bytes >> c.filler_shift : 0;
        out.back().extents.clear();
      }
    }
    return out;
  }

  // The tree down to what the events name; or, where the rest only took space that the
  // predicate needs taken, that plus a filler (named_tree). Where the events name all of it,
  // the filler from the start: what a later cut stops naming keeps its space until the halve
  // passes find out (in one try) whether the predicate needs it.
  result<void> tree_pass() {
    prune_ = true;
    if (named_tree(best_).size() == best_.tree.size()) {
      filler_ = true;
      return {};
    }
    const result<bool> holds = try_one(best_);
    if (!holds) return failure(holds.error());
    if (*holds) return {};
    filler_ = true;
    const result<bool> filled = try_one(best_);
    if (!filled) return failure(filled.error());
    if (*filled) return {};
    filler_ = prune_ = false;  // the whole tree, then
    return {};
  }

  // ddmin over units of the best candidate's events: at `level` 0 processes, 1 threads,
  // 2 files, 3 events. Smaller parts are tried first: the cheapest big cut.
  result<void> delete_pass(int level) {
    std::map<uint64_t, std::vector<size_t>> groups;
    for (size_t i = 0; i < best_.events.size(); ++i) {
      const event& e = best_.events[i];
      const thread_info& t = threads_[e.thread < threads_.size() ? e.thread : 0];
      uint64_t key = i;
      if (level == 0)  // a process: (host, pid)
        key = uint64_t{t.host} << 32 | static_cast<uint32_t>(t.host_pid ? t.host_pid : t.pid);
      if (level == 1) key = e.thread;
      if (level == 2)
        key = e.file ? uint64_t{1} << 40 | e.file
              : e.path ? uint64_t{2} << 40 | e.path
                       : uint64_t{3} << 40 | e.thread;
      groups[key].push_back(i);
    }
    if (groups.size() < 2) return {};
    std::vector<std::vector<size_t>> units;
    for (auto& [k, v] : groups) units.push_back(std::move(v));
    return ddmin(units);
  }

  // Classic ddmin over `units` (indices into the best candidate's events, which each success
  // replaces: units are kept as the events they hold, found again by value).
  result<void> ddmin(const std::vector<std::vector<size_t>>& units) {
    // Units as their events' positions in the original list, so they outlive a success.
    std::vector<std::vector<event>> unit_events(units.size());
    for (size_t u = 0; u < units.size(); ++u)
      for (size_t i : units[u]) unit_events[u].push_back(best_.events[i]);
    const auto chosen_of = [&](const std::vector<size_t>& subset) {
      std::multiset<std::pair<uint64_t, thread_id>> want;
      for (size_t u : subset)
        for (const event& e : unit_events[u]) want.emplace(e.ts, e.thread);
      std::vector<bool> chosen(best_.events.size(), false);
      for (size_t i = 0; i < best_.events.size(); ++i) {
        auto it = want.find({best_.events[i].ts, best_.events[i].thread});
        if (it != want.end()) {
          chosen[i] = true;
          want.erase(it);
        }
      }
      return chosen;
    };
    const auto size_of = [&](const std::vector<size_t>& subset) {
      size_t n = 0;
      for (size_t u : subset) n += unit_events[u].size();
      return n;
    };
    std::vector<size_t> c(units.size());
    std::iota(c.begin(), c.end(), 0);
    size_t n = 2;
    while (c.size() >= 2 && !out_of_tries()) {
      std::vector<std::vector<size_t>> chunks(n);
      for (size_t i = 0; i < c.size(); ++i) chunks[i * n / c.size()].push_back(c[i]);
      chunks.erase(std::remove_if(chunks.begin(), chunks.end(), [](const auto& k) { return k.empty(); }),
                   chunks.end());
      const auto smaller = [&](const auto& a, const auto& b) { return size_of(a) < size_of(b); };
      // each chunk alone, smallest first
      std::stable_sort(chunks.begin(), chunks.end(), smaller);
      const result<long> alone =
          take_first(chunks.size(), [&](size_t k) { return subset(chosen_of(chunks[k])); });
      if (!alone) return failure(alone.error());
      if (*alone >= 0) {
        c = chunks[*alone];
        std::sort(c.begin(), c.end());
        n = 2;
        continue;
      }
      // each complement, the largest cut (smallest complement) first
      if (n > 2) {
        std::vector<std::vector<size_t>> rests;
        for (size_t k = 0; k < chunks.size(); ++k) {
          std::vector<size_t> rest;
          for (size_t j = 0; j < chunks.size(); ++j)
            if (j != k) rest.insert(rest.end(), chunks[j].begin(), chunks[j].end());
          rests.push_back(std::move(rest));
        }
        std::stable_sort(rests.begin(), rests.end(), smaller);
        const result<long> cut =
            take_first(rests.size(), [&](size_t k) { return subset(chosen_of(rests[k])); });
        if (!cut) return failure(cut.error());
        if (*cut >= 0) {
          c = rests[*cut];
          std::sort(c.begin(), c.end());
          n = std::max<size_t>(n - 1, 2);
          continue;
        }
      }
      if (n >= c.size()) break;
      n = std::min(n * 2, c.size());
    }
    return {};
  }

  // Each run of reads or writes of one fd by one thread, at consecutive positions, with no
  // other event of that thread between them, as one op; where that does not hold, each run
  // but its last op as one (the last may be what fails once the others filled a disk).
  result<void> coalesce_pass() {
    const std::vector<event>& in = best_.events;
    // runs: each event's first of its run, by the thread's previous event
    std::vector<size_t> first(in.size());
    std::map<thread_id, size_t> last;  // a thread's previous event
    for (size_t i = 0; i < in.size(); ++i) {
      const event& e = in[i];
      first[i] = i;
      const auto it = last.find(e.thread);
      if (it != last.end()) {
        const event& p = in[it->second];
        if (p.kind == e.kind && plain_data_op(e.kind) && p.fd == e.fd && p.file == e.file &&
            p.result >= 0 && static_cast<uint64_t>(p.result) == p.size && e.result >= 0 &&
            e.offset == p.offset + p.result && p.via == 0 && e.via == 0)
          first[i] = first[it->second];
      }
      last[e.thread] = i;
    }
    std::vector<size_t> run_length(in.size(), 0);
    for (size_t i = 0; i < in.size(); ++i) ++run_length[first[i]];
    const auto coalesced = [&](bool keep_last) {
      candidate c;
      c.tree = best_.tree;
      c.filler_shift = best_.filler_shift;
      std::vector<size_t> seen(in.size(), 0), at(in.size(), 0);  // by run: ops met, output slot
      for (size_t i = 0; i < in.size(); ++i) {
        const size_t r = first[i];
        const size_t k = seen[r]++;
        const bool alone = keep_last && run_length[r] >= 2 && k == run_length[r] - 1;
        if (k == 0 || alone) {
          at[r] = c.events.size();
          c.events.push_back(in[i]);
          continue;
        }
        event& p = c.events[at[r]];
        if (p.size + in[i].size > max_coalesced) {  // a new op carries on
          at[r] = c.events.size();
          c.events.push_back(in[i]);
          continue;
        }
        p.size += in[i].size;
        p.result += in[i].result;
        p.dur = std::max(p.dur, in[i].ts + in[i].dur - p.ts);
      }
      return c;
    };
    for (const bool keep_last : {false, true}) {
      candidate c = coalesced(keep_last);
      if (c.events.size() == in.size()) continue;
      const result<bool> holds = try_one(c);
      if (!holds) return failure(holds.error());
      if (*holds) return {};
    }
    return {};
  }

  // A process's threads as one (its first): their clones and exits go.
  result<void> merge_threads_pass() {
    std::map<uint64_t, thread_id> first;  // (host, pid) -> the thread that comes first
    std::map<thread_id, thread_id> into;
    for (const event& e : best_.events) {
      const thread_info& t = threads_[e.thread < threads_.size() ? e.thread : 0];
      const uint64_t key = uint64_t{t.host} << 32 | static_cast<uint32_t>(t.pid);
      const auto [it, added] = first.emplace(key, e.thread);
      if (!added && it->second != e.thread) into[e.thread] = it->second;
    }
    if (into.empty()) return {};
    std::set<std::pair<uint16_t, int32_t>> merged_tids;
    for (const auto& [t, to] : into) merged_tids.emplace(threads_[t].host, threads_[t].tid);
    candidate c = best_;
    std::vector<event> out;
    for (event e : c.events) {
      const auto it = into.find(e.thread);
      if (it != into.end()) {
        if (e.kind == op::exit) continue;
        e.thread = it->second;
      }
      if ((e.kind == op::clone || e.kind == op::clone3) &&
          merged_tids.count({threads_[e.thread].host, static_cast<int32_t>(e.result)}))
        continue;
      out.push_back(e);
    }
    c.events = std::move(out);
    FSRR_TRY(try_one(c));
    return {};
  }

  // Halves every op's length (`files`: every initial file's size) while the predicate holds;
  // then, where halving all failed, each of the largest alone.
  result<void> halve_pass(bool files) {
    const auto halve = [&](candidate& c, std::optional<size_t> only) {
      bool any = false;
      if (files) {
        const std::vector<tree_entry> named = named_tree(c);
        std::set<path_id> in_use;
        for (const tree_entry& t : named) in_use.insert(t.path);
        for (size_t i = 0; i < c.tree.size(); ++i) {
          tree_entry& t = c.tree[i];
          if ((only && *only != i) || !S_ISREG(t.mode) || t.size < 2 || !in_use.count(t.path))
            continue;
          t.size /= 2;
          t.allocated = std::min(t.allocated, t.size);
          t.extents.clear();
          any = true;
        }
        if (filler_ && !only && c.filler_shift < 64) {
          ++c.filler_shift;
          any = true;
        }
      } else {
        for (size_t i = 0; i < c.events.size(); ++i) {
          event& e = c.events[i];
          if ((only && *only != i) || !plain_data_op(e.kind) || e.size < 2 || e.via != 0) continue;
          e.size /= 2;
          if (e.result > 0) e.result = std::min<int64_t>(e.result, static_cast<int64_t>(e.size));
          any = true;
        }
      }
      return any;
    };
    if (!files) {  // lengths that only need to be there: one byte each, in one try
      candidate c = best_;
      bool any = false;
      for (event& e : c.events)
        if (plain_data_op(e.kind) && e.size > 1 && e.via == 0) {
          e.size = 1;
          if (e.result > 1) e.result = 1;
          any = true;
        }
      if (any) {
        const result<bool> holds = try_one(c);
        if (!holds) return failure(holds.error());
        if (*holds) return {};
      }
    }
    if (files) {  // files that only need to be there: empty, in one try
      candidate c = best_;
      const std::vector<tree_entry> named = named_tree(c);
      std::set<path_id> in_use;
      for (const tree_entry& t : named) in_use.insert(t.path);
      bool any = false;
      for (tree_entry& t : c.tree)
        if (S_ISREG(t.mode) && t.size > 0 && in_use.count(t.path)) {
          t.size = t.allocated = 0;
          t.extents.clear();
          any = true;
        }
      if (filler_ && c.filler_shift < 64) {
        c.filler_shift = 64;
        any = true;
      }
      if (any) {
        const result<bool> holds = try_one(c);
        if (!holds) return failure(holds.error());
        if (*holds) return {};
      }
    }
    for (int k = 0; k < 40 && !out_of_tries(); ++k) {
      candidate c = best_;
      if (!halve(c, std::nullopt)) return {};
      const result<bool> holds = try_one(c);
      if (!holds) return failure(holds.error());
      if (!*holds) break;
    }
    // the largest few alone
    std::vector<std::pair<uint64_t, size_t>> sizes;
    if (files) {
      for (size_t i = 0; i < best_.tree.size(); ++i)
        if (S_ISREG(best_.tree[i].mode) && best_.tree[i].size >= 2)
          sizes.emplace_back(best_.tree[i].size, i);
    } else {
      for (size_t i = 0; i < best_.events.size(); ++i)
        if (plain_data_op(best_.events[i].kind) && best_.events[i].size >= 2 && best_.events[i].via == 0)
          sizes.emplace_back(best_.events[i].size, i);
    }
    if (sizes.size() < 2) return {};
    std::sort(sizes.rbegin(), sizes.rend());
    sizes.resize(std::min<size_t>(sizes.size(), 8));
    // each halving that holds is kept in turn (indices stay valid: halving keeps every entry)
    for (const auto& [size, i] : sizes) {
      if (out_of_tries()) break;
      candidate c = best_;
      if (halve(c, i)) FSRR_TRY(try_one(c));
    }
    return {};
  }

  // Idle time (no event in progress on any thread) down to 1 ns: a minimized trace replays
  // afap anyway; order and each op's duration stay.
  static void drop_gaps(std::vector<event>& events) {
    uint64_t busy_until = 0, shift = 0;
    bool first = true;
    for (event& e : events) {
      const uint64_t ts = e.ts, end = e.ts + e.dur;
      if (first) {
        shift = ts;
        first = false;
      } else if (ts > busy_until + 1) {
        shift += ts - busy_until - 1;
      }
      busy_until = std::max(busy_until, end);
      e.ts = ts - shift;
    }
  }

  // The candidate as a trace.
  result<void> write(const std::vector<event>& events, const std::vector<tree_entry>& tree,
                     const std::string& path, bool force) {
    header_info h = in_.header();
    h.derived = "minimize";
    auto created = transform::trace_rewriter::create(in_, path, h, force);
    if (!created) return failure(created.error());
    transform::trace_rewriter& w = *created;
    for (const tree_entry& t : tree) w.add_tree_entry(t);
    for (const event& e : events) w.append(e);
    if (in_.summary().incomplete) w.writer().mark_incomplete(in_.summary().incomplete);
    return w.finish();
  }

  // Tries: each candidate written, replayed into a fresh target, the predicate asked, up to
  // `jobs` at once; each one's predicate exit status, or 1 when it could not even be replayed.
  // An error only when interrupted. Traces are written one at a time (the reader is shared);
  // the replays, in processes of their own, and the predicates run side by side.
  result<std::vector<int>> attempt_all(const std::vector<candidate>& cands) {
    std::vector<int> status(cands.size(), 1);
    std::vector<std::string> traces(cands.size());
    std::vector<unsigned> numbers(cands.size());
    std::vector<std::thread> running;
    for (size_t k = 0; k < cands.size(); ++k) {
      if (o_.cancel && o_.cancel->load()) break;
      numbers[k] = ++tries_;
      traces[k] = fmt::format("{}/try{}.trace", scratch_, numbers[k]);
      const std::vector<tree_entry> tree = named_tree(cands[k]);
      if (!write(cands[k].events, tree, traces[k], true)) continue;  // not replayable: does not
      running.emplace_back([this, &status, &traces, &numbers, &cands, k] {
        status[k] = try_trace(traces[k], numbers[k], k);
        say(fmt::format("minimize: try {}: {} events: {}", numbers[k], cands[k].events.size(),
                        status[k] == 0 ? "still holds" : "does not"));
      });
    }
    for (std::thread& t : running) t.join();
    for (const std::string& t : traces)
      if (!t.empty()) ::unlink(t.c_str());
    if (o_.cancel && o_.cancel->load()) return failure("interrupted");
    return status;
  }

  // One try of a written trace: replayed by `fsrr replay` in a process of its own into a
  // fresh target (job `slot`'s), then the predicate. Its exit status; 1 when it could not run.
  int try_trace(const std::string& trace, unsigned number, size_t slot) {
    if (o_.no_replay) {
      const command_result r =
          run_command(o_.predicate, {.env = {{"FSRR_TRACE", trace}}, .keep_output = false});
      return r.status < 0 ? 1 : r.status;
    }
    const std::string report = fmt::format("{}/try{}.json", scratch_, number);
    std::unique_ptr<made_fs> fs;  // torn down when this returns
    std::string target;
    if (o_.fs) {
      const std::string images = fmt::format("{}/job{}", scratch_, slot);
      if (::mkdir(images.c_str(), 0700) != 0 && errno != EEXIST) return 1;
      result<std::unique_ptr<made_fs>> made = made_fs::make(*o_.fs, images, 0);
      if (!made) {
        say(fmt::format("minimize: try {}: {}", number, made.error().message));
        return 1;
      }
      fs = std::move(*made);
      target = fs->path();
    } else {
      target = fmt::format("{}/target{}", scratch_, number);
      if (::mkdir(target.c_str(), 0755) != 0) return 1;
    }
    struct cleanup {  // a directory of its own and the report go, whatever happens
      const std::string &target, &report;
      bool own;
      ~cleanup() {
        std::error_code ec;
        if (own) std::filesystem::remove_all(target, ec);
        ::unlink(report.c_str());
      }
    } cleanup{target, report, !o_.fs};
    const command_result replayed = run_command(
        {self_exe_, "replay", trace, target, "--timing", o_.keep_timing ? "faithful" : "afap",
         "--report", report, "--no-progress"},
        {.keep_output = false});
    if (replayed.status < 0 || ::access(report.c_str(), R_OK) != 0) return 1;
    if (o_.cancel && o_.cancel->load()) return 1;
    const command_result r = run_command(
        o_.predicate,
        {.env = {{"FSRR_TARGET", target}, {"FSRR_REPORT", report}, {"FSRR_TRACE", trace}},
         .keep_output = false});
    return r.status < 0 ? 1 : r.status;
  }

  minimizer(const minimize_options& o, trace_reader in) : o_(o), in_(std::move(in)) {}

  const minimize_options& o_;
  mutable trace_reader in_;  // its tables are read lazily
  std::vector<thread_info> threads_;
  candidate best_;
  bool prune_ = false;   // candidates hold only the tree their events name ...
  bool filler_ = false;  // ... and a file as large as the rest
  size_t changes_ = 0;            // successful tries so far
  std::string scratch_;
  bool own_scratch_ = false;
  unsigned tries_ = 0;
  std::string self_exe_ = self_exe();
  mutable std::mutex say_mutex_;
};

}  // namespace

result<minimize_result> minimize(const minimize_options& o) {
  if (o.predicate.empty()) return failure("no predicate: give one after --");
  if (o.fs && ::geteuid() != 0) return failure("--fs needs root (it makes file systems)");
  if (o.fs && o.no_replay) return failure("--no-replay replays nothing: --fs has no use with it");
  struct stat st;
  if (::stat(o.out.c_str(), &st) == 0 && !o.force)
    return failure("{} exists (--force to overwrite it)", o.out);
  if (::access(o.predicate.front().c_str(), X_OK) != 0 &&
      o.predicate.front().find('/') != std::string::npos)
    return failure("cannot run {}: {}", o.predicate.front(), std::strerror(errno));
  result<std::unique_ptr<minimizer>> m = minimizer::open(o);
  if (!m) return failure(m.error());
  return (*m)->run();
}

}  // namespace fsrr::lab
