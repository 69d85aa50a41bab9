#include "slice.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "closure.h"
#include "end_state.h"
#include "fd_map.h"
#include "rewrite.h"

namespace fsrr::transform {
namespace {

bool beneath(std::string_view path, const std::vector<std::string>& prefixes) {
  for (std::string_view p : prefixes) {
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    if (p == "/" || (path.substr(0, p.size()) == p &&
                     (path.size() == p.size() || path[p.size()] == '/')))
      return true;
  }
  return false;
}

// Each pick names a host the trace has, and a plain one a pid (tid) of one host only.
result<void> check_picks(trace_reader& in, const std::vector<thread_info>& threads,
                         const std::vector<thread_pick>& picks, const char* option,
                         int32_t thread_info::*id) {
  const header_info& h = in.header();
  for (const thread_pick& p : picks) {
    if (!p.host.empty() && h.hosts.size() <= 1 && p.host != h.hostname)
      return failure("{} {}: the trace is of one host, {}", option, p.text(), h.hostname);
    if (!p.host.empty() && h.hosts.size() > 1 &&
        std::none_of(h.hosts.begin(), h.hosts.end(), [&](const host_info& x) { return x.name == p.host; })) {
      std::string names;
      for (const host_info& x : h.hosts) names += (names.empty() ? "" : ", ") + x.name;
      return failure("{} {}: the trace has no host {} (its hosts: {})", option, p.text(), p.host, names);
    }
    if (h.hosts.size() <= 1) continue;
    // hosts by index: a trace merged by an older fsrr may name two hosts alike, or one not
    std::vector<uint16_t> on;
    for (size_t t = 1; t < threads.size(); ++t)
      if (threads[t].*id == p.id && (p.host.empty() || host_name(h, threads[t].host) == p.host) &&
          std::find(on.begin(), on.end(), threads[t].host) == on.end())
        on.push_back(threads[t].host);
    if (on.size() < 2) continue;
    const std::string first = host_name(h, on[0]), second = host_name(h, on[1]);
    if (!p.host.empty() || first.empty() || first == second)
      return failure("{} {}: hosts {} and {} of this trace share the name '{}' (merged by an "
                     "older fsrr): merge its traces again to name each its own",
                     option, p.text(), on[0], on[1], first);
    return failure("{} {} is a {} on hosts {} and {}{}: name one ({} {}:{})", option, p.id,
                   option == std::string_view("--pid") ? "process" : "thread", first, second,
                   on.size() > 2 ? " and more" : "", option, first, p.id);
  }
  return {};
}

}  // namespace

std::string thread_pick::text() const {
  return host.empty() ? std::to_string(id) : fmt::format("{}:{}", host, id);
}

result<thread_pick> parse_thread_pick(std::string_view text, std::string_view option) {
  thread_pick p;
  const size_t colon = text.rfind(':');
  std::string_view number = text;
  if (colon != std::string_view::npos) {
    p.host = std::string(text.substr(0, colon));
    number = text.substr(colon + 1);
    if (p.host.empty()) return failure("{} {}: HOST:ID names a host before the colon", option, text);
  }
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), p.id);
  if (ec != std::errc() || end != number.data() + number.size() || p.id <= 0)
    return failure("{} {}: a pid or tid (a positive number), or HOST:ID", option, text);
  return p;
}

namespace {

std::string described(const slice_options& o) {
  std::string d = "slice";
  if (o.from) d += fmt::format(" --from {}", *o.from);
  if (o.to) d += fmt::format(" --to {}", *o.to);
  for (const thread_pick& p : o.pids) d += " --pid " + p.text();
  for (const thread_pick& t : o.tids) d += " --tid " + t.text();
  for (const auto& p : o.paths) d += " --path " + p;
  return d;
}

result<uint64_t> ns_of(double seconds) {
  if (!(seconds >= 0)) return failure("{} s: not a time in the trace", seconds);
  return static_cast<uint64_t>(seconds * 1e9);
}

// The default permission bits of an object the trace made, where its mode passed through
// a umask nobody recorded: what a 022 umask leaves.
uint32_t default_mode(uint32_t type) {
  return S_ISDIR(type) ? 0755 : S_ISLNK(type) ? 0777 : 0644;
}

// Threads as they stand at the start: the fd table each uses then, by a number of the slice's
// own (tables made in the slice keep the trace's numbers, far below these).
void tables_at_start(const fd_map& fds, std::vector<thread_info>& threads,
                     std::vector<uint32_t>& table_at_start) {
  std::unordered_map<uint64_t, uint32_t> tables;
  for (thread_id t = 1; t < threads.size(); ++t)
    if (const uint64_t id = fds.table_identity(t)) {
      auto [it, added] = tables.try_emplace(id, (1u << 30) + static_cast<uint32_t>(tables.size()));
      table_at_start[t] = it->second;
      threads[t].fd_table = it->second;
    }
}

// Files open at the start, opened (fd_bind) by the first thread of each table the slice has
// events of.
std::vector<event> open_at_start(const fd_map& fds, const std::vector<event>& window,
                                 const std::vector<uint32_t>& table_at_start, uint64_t from) {
  std::vector<event> list;
  std::unordered_map<uint32_t, bool> bound;
  for (const event& w : window) {
    const uint32_t table = table_at_start[w.thread];
    if (!table || bound[table]) continue;
    bound[table] = true;
    for (const open_fd& f : fds.open_fds(w.thread)) {
      const handle_info& h = fds.handle(f.h);
      if (h.path == no_id) continue;
      event b;
      b.kind = op::fd_bind;
      b.ts = from;
      b.thread = w.thread;
      b.fd = f.fd;
      b.file = h.file;
      b.path = h.path;
      b.offset = h.pos;
      b.flags = (h.flags & ~static_cast<uint32_t>(O_CLOEXEC)) | (f.cloexec ? O_CLOEXEC : 0);
      if (h.listed) b.aux = h.listed == ~uint64_t{0} ? h.listed : h.listed + 1;
      list.push_back(b);
    }
  }
  return list;
}

// The events the options choose (--pid, --tid, --path), before closure() adds what they need;
// the first `synthetic` (the fds open at the start) only if a kept event uses them.
std::vector<bool> chosen(trace_reader& in, const std::vector<event>& list,
                         const std::vector<thread_info>& threads, size_t synthetic,
                         const slice_options& o) {
  std::vector<bool> keep(list.size(), false);
  std::vector<uint8_t> path_in(in.path_count() + 1, 0);  // 0 unknown, 1 no, 2 yes
  const auto inside = [&](path_id p) {
    if (p == no_id || o.paths.empty()) return false;
    if (p >= path_in.size()) path_in.resize(p + 1, 0);
    if (!path_in[p]) path_in[p] = beneath(in.placed_path(p), o.paths) ? 2 : 1;
    return path_in[p] == 2;
  };
  fd_map chosen_fds(threads);
  fd_effect fx;
  for (size_t i = 0; i < list.size(); ++i) {
    const event& e = list[i];
    chosen_fds.apply(e, fx);
    const thread_info& t = threads[e.thread];
    bool yes = true;
    if (!o.pids.empty() || !o.tids.empty()) {
      // a trace of one host names it in its header (HOST:PID of it picks as PID does)
      const std::string host = in.header().hosts.size() > 1 ? host_name(in.header(), t.host)
                                                            : in.header().hostname;
      const auto picked = [&](const std::vector<thread_pick>& picks, int32_t id) {
        return std::any_of(picks.begin(), picks.end(), [&](const thread_pick& p) {
          return p.id == id && (p.host.empty() || p.host == host);
        });
      };
      yes = picked(o.pids, t.pid) || picked(o.tids, t.tid);
    }
    if (yes && !o.paths.empty()) {
      const path_id h1 = fx.h1 ? chosen_fds.handle(fx.h1).path : no_id;
      const path_id h2 = fx.h2 ? chosen_fds.handle(fx.h2).path : no_id;
      yes = (has(e.kind, F_PATH) && inside(e.path)) || (has(e.kind, F_PATH2) && inside(e.path2)) ||
            inside(h1) || inside(h2);
    }
    keep[i] = yes && i >= synthetic;
  }
  return keep;
}

// The initial tree of a slice that starts later: the state then; an entry the trace did not
// change since it was found is the recorded one. Returns how many entries.
result<uint64_t> write_start_tree(trace_reader& in, const expected_state& s, uint64_t from,
                                  trace_rewriter& w) {
  const int64_t start_realtime = in.header().clock_realtime_ns + static_cast<int64_t>(from);
  std::unordered_map<uint32_t, uint32_t> names;  // link group -> names
  for (const auto& [path, x] : s)
    if (!x.absent && x.link_group) ++names[x.link_group];
  const auto& tree = in.tree();
  uint64_t n = 0;
  for (const auto& [path, x] : s) {
    if (x.absent || path == "/") continue;
    const auto placed = w.placed(path);
    if (!placed) return tl::unexpected(placed.error());
    const path_id at = *placed;
    ++n;
    if (!x.changed && x.tree_index < tree.size()) {  // as the recording found it
      w.add_tree_entry_at(tree[x.tree_index], at);
      continue;
    }
    tree_entry t;
    t.path = at;
    const uint32_t type = x.mode & S_IFMT;
    t.mode = type | (x.check_mode ? x.mode & 07777 : default_mode(type));
    if (x.check_owner) t.uid = x.uid, t.gid = x.gid;
    t.size = S_ISREG(type) ? x.size : 0;
    t.allocated = t.size;
    t.mtime_ns = t.atime_ns = t.ctime_ns = x.check_mtime ? x.mtime_ns : start_realtime;
    if (S_ISLNK(type)) t.target = w.writer().intern_string(x.target);
    if (x.check_xattrs)
      for (const auto& [name, size] : x.xattrs)
        t.xattrs.push_back({w.writer().intern_string(name), size});
    t.link_group = x.link_group;
    t.nlink = x.link_group ? names[x.link_group] : 1;
    w.writer().add_tree_entry(t);
  }
  return n;
}

}  // namespace

result<slice_result> slice(trace_reader& in, const std::string& out, const slice_options& o) {
  const auto from_ns = o.from ? ns_of(*o.from) : result<uint64_t>(0);
  const auto to_ns = o.to ? ns_of(*o.to) : result<uint64_t>(std::numeric_limits<uint64_t>::max());
  if (!from_ns) return tl::unexpected(from_ns.error());
  if (!to_ns) return tl::unexpected(to_ns.error());
  const uint64_t from = *from_ns, to = *to_ns;
  if (from >= to) return failure("--from must come before --to");
  const bool filtered = !o.pids.empty() || !o.tids.empty() || !o.paths.empty();

  // The state at the start, and the events of the slice's time.
  end_state_model state(in);
  std::vector<event> window;
  {
    auto events = in.events();
    for (event e; events.next(e);) {
      if (e.ts >= to) break;
      if (e.ts < from)
        state.apply(e);
      else
        window.push_back(e);
    }
    FSRR_TRY(events.status());
  }
  const fd_map& fds = state.fds();

  std::vector<thread_info> threads(in.thread_count() + 1);
  std::vector<uint32_t> table_at_start(threads.size(), 0);
  for (thread_id t = 1; t < threads.size(); ++t) threads[t] = in.thread(t);
  FSRR_TRY(check_picks(in, threads, o.pids, "--pid", &thread_info::pid));
  FSRR_TRY(check_picks(in, threads, o.tids, "--tid", &thread_info::tid));
  if (from) tables_at_start(fds, threads, table_at_start);
  std::vector<event> list;
  if (from) list = open_at_start(fds, window, table_at_start, from);
  const size_t synthetic = list.size();
  list.insert(list.end(), window.begin(), window.end());
  window.clear();
  window.shrink_to_fit();

  // What the options choose, and what that needs of the rest.
  std::vector<bool> keep(list.size(), true);
  slice_result res;
  if (filtered) {
    keep = chosen(in, list, threads, synthetic, o);
    res.chosen = static_cast<uint64_t>(std::count(keep.begin(), keep.end(), true));
    keep = closure(in, list, threads, keep);
  } else {
    res.chosen = list.size();
  }

  header_info h = in.header();
  h.derived = described(o);
  auto rewriter = trace_rewriter::create(in, out, h, o.force);
  if (!rewriter) return tl::unexpected(rewriter.error());
  trace_rewriter& w = *rewriter;
  // the initial tree: the state at the start
  if (!from) {
    for (const tree_entry& e : in.tree()) w.add_tree_entry(e);
    res.tree = in.tree().size();
  } else {
    auto written = write_start_tree(in, state.result(), from, w);
    if (!written) return tl::unexpected(written.error());
    res.tree = *written;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!keep[i]) continue;
    w.thread(list[i].thread, table_at_start[list[i].thread]);
    w.append(list[i]);
    ++res.events;
    if (i < synthetic) ++res.bound;
  }
  w.copy_counters();
  FSRR_TRY(w.finish());
  return res;
}

}  // namespace fsrr::transform
