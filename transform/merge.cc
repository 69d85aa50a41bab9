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
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "merge_inputs.h"
#include "rewrite.h"
#include "system_paths.h"

namespace fsrr::transform {

namespace {

using namespace merge_detail;

// The output's header: every input's hosts, on the one clock.
header_info merged_header(const std::vector<input>& in, int64_t start,
                          const std::vector<std::string>& shared, uint64_t united) {
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
      // Reports name a process HOST:PID, so each host's name is its own: a name met again
      // (two recordings on one machine) becomes NAME#2, NAME#3...
      // (a merged input's NAME#2 counts again from its NAME)
      const std::string recorded = host_name_parts(y.name).first;
      const std::string base = recorded.empty() ? std::string("host") : recorded;
      y.name = base;
      for (unsigned n = 2; !named.insert(y.name).second; ++n) y.name = fmt::format("{}#{}", base, n);
      hostnames += (hostnames.empty() ? "" : ",") + y.name;
      h.hosts.push_back(std::move(y));
    }
  }
  h.hostname = hostnames;
  h.key_id = in[0].r->header().key_id;
  h.derived = fmt::format("merge of {} traces", in.size());
  if (!shared.empty()) {
    std::string list;
    for (const std::string& p : shared) list += (list.empty() ? "" : " ") + p;
    h.derived += fmt::format("; shared: {}; each host's other paths its own", list);
  } else if (united) {
    h.derived += fmt::format("; {} file{} outside the system directories united across hosts",
                             united, united == 1 ? "" : "s");
  }

  return h;
}

// The directory beneath TARGET/hosts of each host's own paths: its name where that is a plain
// file name (a trace is untrusted), else hostN; one each.
std::vector<std::string> host_dirs(const header_info& h) {
  std::vector<std::string> dirs;
  std::set<std::string> taken;
  for (size_t k = 0; k < h.hosts.size(); ++k) {
    const std::string& name = h.hosts[k].name;
    std::string dir = host_root_name(std::string(host_root_tag) + name) ? name : fmt::format("host{}", k + 1);
    for (unsigned n = 2; !taken.insert(dir).second; ++n) dir = fmt::format("host{}-{}", k + 1, n);
    dirs.push_back(std::move(dir));
  }
  return dirs;
}

// The roots, numbered as place_inputs numbered them: the first (its description is the first
// input's), then each input's others and, with --shared, its host's own.
void write_roots(std::vector<input>& in, trace_writer& w, const std::vector<std::string>& dirs) {
  trace_root r1;
  if (!in[0].r->roots().empty()) {
    r1 = in[0].r->roots()[0];
    r1.where = r1.where ? w.intern_string(in[0].r->string(r1.where)) : no_id;
  }
  w.add_root(r1);
  for (input& x : in) {
    for (size_t k = 1; k < x.r->roots().size(); ++k) {
      trace_root r = x.r->roots()[k];
      r.where = r.where ? w.intern_string(x.r->string(r.where)) : no_id;
      w.add_root(r);
    }
    if (x.place.host_root) {
      trace_root r = x.r->roots().empty() ? trace_root{} : x.r->roots()[0];
      r.where = w.intern_string(std::string(host_root_tag) + dirs[x.place.host_base]);
      w.add_root(r);
    }
  }
}

// One output file an object, every other file of its class an alias of it: the file a create
// made, else the file of a kept tree entry, else any, each in input and then time or tree
// order (the same ids whatever the hash seed). One hard link group an object, numbered anew.
void write_tree(std::vector<input>& in, std::vector<trace_rewriter>& maps,
                object_classes& objects, merge_result& res) {
  std::unordered_map<uint64_t, std::pair<size_t, file_id>> class_file;
  std::unordered_map<uint64_t, uint32_t> class_group;
  auto file_of_class = [&](size_t i, file_id f) {
    const uint64_t c = objects.find(object_classes::file_node(i, f));
    auto [it, added] = class_file.try_emplace(c, i, f);
    if (!added && it->second != std::pair{i, f})
      maps[i].alias_file(f, maps[it->second.first].file(it->second.second));
  };
  {
    std::vector<std::tuple<size_t, uint64_t, file_id>> made;
    for (size_t i = 0; i < in.size(); ++i)
      for (const auto& [h, creates] : in[i].created)
        for (const created_path& c : creates)
          if (c.file) made.emplace_back(i, c.ts, c.file);
    std::sort(made.begin(), made.end());
    for (const auto& [i, ts, f] : made) file_of_class(i, f);
  }
  // With --shared, each host's copies of the directories on the way to a shared prefix ("/mnt"
  // for /mnt/lustre) as it found them: its own paths hang from them, and a create right in
  // one needs it there. First: a directory comes before what it holds.
  for (size_t i = 0; i < in.size(); ++i) {
    path_split* split = in[i].place.split;
    if (!split) continue;
    for (tree_entry e : in[i].r->tree()) {
      if (!S_ISDIR(e.mode) || e.path == root_path || !split->on_the_way(e.path)) continue;
      const path_id at = maps[i].host_path(e.path);
      if (at == no_id) continue;
      e.file = no_id;  // the same directory as the shared one's entry: no second name of it
      e.link_group = 0;
      maps[i].add_tree_entry_at(e, at);
      ++res.tree;
    }
  }
  for (bool kept : {true, false})
    for (size_t i = 0; i < in.size(); ++i) {
      uint32_t idx = 0;
      for (tree_entry e : in[i].r->tree()) {
        if (in[i].dropped[idx++] == kept) continue;
        if (e.file) file_of_class(i, e.file);
        if (!kept) continue;
        if (e.link_group) {
          const uint64_t c = objects.find(e.file ? object_classes::file_node(i, e.file)
                                                 : object_classes::group_node(i, e.link_group));
          e.link_group =
              class_group.try_emplace(c, static_cast<uint32_t>(class_group.size() + 1))
                  .first->second;
        }
        maps[i].add_tree_entry(e);
        ++res.tree;
      }
    }
  for (input& x : in) {  // what is no longer needed before the events: they are read once more
    x.tree_at = {};
    x.tree_file = {};
    x.created = {};
  }

}

// Events, merged by their time on the one clock (ties: input order), and the inputs' counters.
result<void> write_events(std::vector<input>& in, std::vector<trace_rewriter>& maps,
                          trace_writer& w, merge_result& res) {
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
  return {};
}

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
  for (const std::string& p : o.shared)
    if (p.empty() || p[0] != '/' || p == "/" || p.find("//") != std::string::npos ||
        (p.size() > 1 && p.back() == '/') || p.find("/./") != std::string::npos ||
        p.find("/../") != std::string::npos || p.ends_with("/.") || p.ends_with("/.."))
      return failure("merge --shared '{}': expected the absolute path of a directory other than "
                     "/, of plain names (e.g. /mnt/lustre)",
                     p);
  if (!o.shared.empty())
    for (const input& x : in)
      if (const size_t n = x.r->header().hosts.size(); n > 1)
        return failure("merge --shared: {} is a merge of {} hosts already, whose own paths are "
                       "one; merge their recordings with --shared instead",
                       x.name, n);
  FSRR_TRY(refuse(in));
  const int64_t start = one_clock(in);
  FSRR_TRY(place_inputs(in, o.shared));
  // The initial trees united on the merged clock.
  object_classes objects;
  tree_counts counts;
  drop_created(in, objects, counts);
  FSRR_TRY(join_shared(in, objects, counts));
  merge_result res;
  res.created = counts.created;
  res.joined = counts.joined;
  res.differing_system = counts.differing_system;
  res.united = count_united(in);
  for (size_t k = 0; k < o.shared.size(); ++k) {
    // one beneath a system directory or another prefix is united anyway: not looked for
    bool covered = is_system_path(o.shared[k]);
    for (size_t m = 0; m < o.shared.size() && !covered; ++m)
      covered = m != k && (o.shared[m] == o.shared[k] ? m < k
                                                       : o.shared[k].starts_with(o.shared[m] + "/"));
    if (covered) continue;
    bool met = false;
    for (const input& x : in) met = met || x.split->prefixes_met()[system_prefixes.size() + k];
    if (!met) res.shared_unmet.push_back(o.shared[k]);
  }

  const header_info h = merged_header(in, start, o.shared, res.united);
  res.hosts = h.hosts.size();
  const std::vector<std::string> dirs = host_dirs(h);
  if (!o.shared.empty()) res.host_dirs = dirs;
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
  write_roots(in, w, dirs);
  std::vector<trace_rewriter> maps;
  maps.reserve(in.size());
  for (input& x : in) maps.push_back(trace_rewriter::into(*x.r, w, x.place));
  write_tree(in, maps, objects, res);
  FSRR_TRY(write_events(in, maps, w, res));
  if (auto done = w.finish(); !done) return tl::unexpected(done.error());
  guard.done = true;
  return res;
}

}  // namespace fsrr::transform
