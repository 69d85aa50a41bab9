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

#include "hash.h"
#include "rewrite.h"
#include "system_paths.h"

namespace fsrr::transform {

uint64_t clock_line::at(uint64_t t) const {
  const int64_t v = offset + static_cast<int64_t>(t);
  return v < 0 ? 0 : static_cast<uint64_t>(v);
}

clock_line realtime_line(uint64_t base_mono, int64_t base_real,
                         const std::vector<std::pair<uint64_t, int64_t>>& pairs) {
  // CLOCK_MONOTONIC and CLOCK_REALTIME run at one rate (NTP slews both); what moves their
  // difference is a step of the realtime clock. The median difference stands for the trace,
  // so that one pair taken across a step does not place it; the trace's own times stay as
  // they were measured.
  std::vector<int64_t> d{base_real - static_cast<int64_t>(base_mono)};
  for (const auto& [mono, real] : pairs) d.push_back(real - static_cast<int64_t>(mono));
  std::nth_element(d.begin(), d.begin() + static_cast<ptrdiff_t>((d.size() - 1) / 2), d.end());
  clock_line l;
  l.offset = d[(d.size() - 1) / 2] + static_cast<int64_t>(base_mono);
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
  // By tree index, on the output's clock: the first successful event on the entry (or on
  // anything beneath it: a directory used through its children was there), the first that
  // changed it.
  std::vector<uint64_t> first_use, first_change;
  // Paths it makes that its tree lacks: every create, in time order (a log made, rotated away
  // and made again).
  std::unordered_map<uint64_t, std::vector<created_path>> created;
  std::vector<bool> dropped;  // by tree index
  uint32_t max_fd_table = 0;
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
    case op::bind:
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
  std::vector<bool> walked(r.path_count() + 1, false);  // ancestors marked used already
  auto use = [&](uint32_t idx, uint64_t ts, bool change) {
    in.first_use[idx] = std::min(in.first_use[idx], ts);
    if (change) in.first_change[idx] = std::min(in.first_change[idx], ts);
  };
  auto tree_index = [&](path_id p) -> std::optional<uint32_t> {
    if (auto it = in.tree_at.find((*in.hash)(p)); it != in.tree_at.end()) return it->second;
    return std::nullopt;
  };
  auto by_path = [&](path_id p, uint64_t ts, bool change) {
    if (p == no_id || p >= walked.size()) return;
    if (const auto idx = tree_index(p)) use(*idx, ts, change);
    // events come in time order: an ancestor marked once keeps its first use
    for (path_id q = p; q != no_id && !walked[q]; q = r.path(q).parent) {
      walked[q] = true;
      if (q != p)
        if (const auto idx = tree_index(q)) use(*idx, ts, false);
    }
  };
  auto by_file = [&](file_id f, uint64_t ts, bool change) {
    if (f == no_id) return;
    if (auto it = in.tree_file.find(f); it != in.tree_file.end()) use(it->second, ts, change);
  };
  auto events = r.events();
  for (event e; events.next(e);) {
    const op_class cls = info(e.kind).cls;
    if (cls == op_class::process && has(e.kind, F_AUX) && e.aux <= UINT32_MAX)
      in.max_fd_table = std::max(in.max_fd_table, static_cast<uint32_t>(e.aux));
    // a failed call shows no object (an open that found nothing, a stat of what is not yet)
    if (e.result < 0) continue;
    const uint64_t ts = in.clock.at(e.ts);
    const bool data_change = cls == op_class::write || cls == op_class::resize ||
                             cls == op_class::copy ||
                             (cls == op_class::open && (e.flags & O_TRUNC));
    const bool name_change = cls == op_class::name;
    if (creates(e)) {
      const uint64_t h = (*in.hash)(made_path(e));
      if (h && !in.tree_at.count(h))
        in.created[h].push_back({ts, has(e.kind, F_FILE) ? e.file : no_id});
    } else if (has(e.kind, F_PATH) && has(e.kind, F_FILE) && e.file != no_id && !name_change) {
      // the file a mkdir or symlink made, as the next look at its path shows it
      if (auto it = in.created.find((*in.hash)(e.path));
          it != in.created.end() && !it->second.back().file)
        it->second.back().file = e.file;
    }
    if (has(e.kind, F_PATH)) by_path(e.path, ts, name_change || data_change);
    if (has(e.kind, F_PATH2)) by_path(e.path2, ts, name_change);
    if (has(e.kind, F_FILE)) by_file(e.file, ts, data_change);
    if (has(e.kind, F_FILE2)) by_file(e.file2, ts, data_change);
  }
  return events.status();
}

// Objects of all inputs that are one object of the output: (input, file id) and (input, hard
// link group) nodes joined when one path of two inputs, one hard link group, or a create and
// the file another input found are one.
class object_classes {
 public:
  static uint64_t file_node(size_t input, file_id f) { return uint64_t{input} << 33 | f; }
  static uint64_t group_node(size_t input, uint32_t g) {
    return uint64_t{input} << 33 | uint64_t{1} << 32 | g;
  }
  uint64_t find(uint64_t x) {
    auto it = parent_.find(x);
    if (it == parent_.end()) return x;
    uint64_t root = it->second;
    while (true) {
      auto up = parent_.find(root);
      if (up == parent_.end() || up->second == root) break;
      root = up->second;
    }
    // flatten the path walked
    for (uint64_t y = x; y != root;) {
      auto& p = parent_[y];
      const uint64_t next = p;
      p = root;
      y = next;
    }
    return root;
  }
  void join(uint64_t a, uint64_t b) {
    a = find(a), b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);  // the smaller node leads: the first input's, the first file
    parent_[b] = a;
    parent_.try_emplace(a, a);
  }

 private:
  std::unordered_map<uint64_t, uint64_t> parent_;
};

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

// ---- the stages of a merge --------------------------------------------------------------

// Refusals first, nothing written for them: one recording twice, different anonymization
// keys, too many hosts.
result<void> refuse(std::vector<input>& in) {
  std::map<std::string, size_t> ids;
  for (size_t i = 0; i < in.size(); ++i) {
    const header_info& h = in[i].r->header();
    std::vector<std::string> own;  // a merged input's hosts' ids, or its own
    for (const host_info& x : h.hosts) own.push_back(x.trace_id);
    if (h.hosts.empty()) own.push_back(h.trace_id);
    for (std::string id : own) {
      // older than format 1.3, no id: the header tells a recording from another as well
      const bool fingerprint = id.empty();
      if (fingerprint) {
        std::string cmd;
        for (const auto& c : h.command) cmd += c + '\0';
        id = fmt::format("{}|{}|{}|{}", h.hostname, h.clock_monotonic_ns, h.clock_realtime_ns, cmd);
      }
      auto [it, added] = ids.try_emplace(id, i);
      if (!added)
        return fingerprint ? failure("{} and {} hold the same recording (the same host, start and "
                                     "command; traces older than format 1.3 carry no trace id): a "
                                     "trace merges once",
                                     in[it->second].name, in[i].name)
                           : failure("{} and {} hold the same recording (trace id {}): a trace "
                                     "merges once",
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

  return {};
}

// One clock, realtime from the earliest start: each input's line to it. Returns that start.
int64_t one_clock(std::vector<input>& in) {
  for (input& x : in) {
    const header_info& h = x.r->header();
    x.clock = realtime_line(h.clock_monotonic_ns, h.clock_realtime_ns, x.r->clock_pairs());
  }
  const int64_t start =
      std::min_element(in.begin(), in.end(), [](const input& a, const input& b) {
        return a.clock.offset < b.clock.offset;
      })->clock.offset;
  for (input& x : in) x.clock.offset -= start;

  return start;
}

// Where each input goes in the output (roots, hosts, fd tables), its paths hashed and its
// tree indexed, and its events scanned for what they create and when they first use a path.
result<void> place_inputs(std::vector<input>& in) {
  // Roots: every input's first root is the output's first (paths stay as recorded); further
  // roots (chroots, containers) are roots of their own.
  uint32_t out_roots = 1;
  size_t host_base = 0;
  uint32_t fd_base = 0;
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
      ++idx;
    }
    if (auto s = scan(x); !s) return tl::unexpected(s.error());
    x.place.fd_table_base = fd_base;  // link groups are numbered anew below
    if (fd_base + uint64_t{x.max_fd_table} > UINT32_MAX)
      return failure("merge: the traces hold more fd tables than one trace can");
    fd_base += x.max_fd_table;
  }

  return {};
}

// An entry of a path another input created before this one first used it is that create's
// file (the latest such create: a log rotated away and made again), left to the create.
void drop_created(std::vector<input>& in, object_classes& objects, merge_result& res) {
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t idx = 0;
    for (const tree_entry& e : in[i].r->tree()) {
      const uint32_t at = idx++;
      if (e.link_group)  // hard links of one input are one object
        objects.join(object_classes::group_node(i, e.link_group),
                     e.file ? object_classes::file_node(i, e.file)
                            : object_classes::group_node(i, e.link_group));
      const auto h = (*in[i].hash)(e.path);
      const uint64_t used = in[i].first_use[at];
      std::optional<std::pair<size_t, created_path>> made;
      for (size_t k = 0; k < in.size(); ++k) {
        if (k == i) continue;
        const auto c = in[k].created.find(h);
        if (c == in[k].created.end()) continue;
        // strictly before: a path this input used and removed may be made again later
        auto before = std::lower_bound(
            c->second.begin(), c->second.end(), used,
            [](const created_path& x, uint64_t t) { return x.ts < t; });
        if (before == c->second.begin()) continue;
        --before;
        if (!made || before->ts > made->second.ts) made = std::pair{k, *before};
      }
      if (!made) continue;
      in[i].dropped[at] = true;
      ++res.created;
      if (e.file && made->second.file)
        objects.join(object_classes::file_node(i, e.file),
                     object_classes::file_node(made->first, made->second.file));
    }
  }
}

// A path several inputs found is one entry and one object, the one the input that used it
// first saw, if their states agree or an event of another input explains the difference.
result<void> join_shared(std::vector<input>& in, object_classes& objects, merge_result& res) {
  std::unordered_map<uint64_t, std::vector<std::pair<uint32_t, uint32_t>>> shared;
  for (size_t i = 0; i < in.size(); ++i)
    for (const auto& [h, idx] : in[i].tree_at)
      if (!in[i].dropped[idx]) shared[h].emplace_back(static_cast<uint32_t>(i), idx);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> groups;  // the paths of several
  for (auto& [h, members] : shared)
    if (members.size() >= 2) groups.push_back(std::move(members));
  shared.clear();
  // the same order whatever the hash seed: by the first member
  std::sort(groups.begin(), groups.end());
  for (auto& members : groups) {
    std::sort(members.begin(), members.end(), [&](const auto& a, const auto& b) {
      return std::pair{in[a.first].first_use[a.second], a.first} <
             std::pair{in[b.first].first_use[b.second], b.first};
    });
    const auto [ki, kidx] = members[0];
    const tree_entry keep = in[ki].r->tree()[kidx];
    const std::string where = in[ki].r->placed_path(keep.path);
    for (size_t m = 1; m < members.size(); ++m) {
      const auto [mi, midx] = members[m];
      const tree_entry e = in[mi].r->tree()[midx];
      if (!same_state(*in[ki].r, keep, *in[mi].r, e)) {
        // explained if another input changed the path before this one first saw it
        bool explained = false;
        for (const auto& [xi, xidx] : members)
          if (xi != mi && in[xi].first_change[xidx] < plus_slack(in[mi].first_use[midx]))
            explained = true;
        if (!explained && is_system_path(where)) {
          // each host's own /usr, /etc: replayed as the first one's, counted
          ++res.differing_system;
          explained = true;
        }
        if (!explained)
          return failure(
              "merge: {}: two states at once: {} in {}, {} in {}, and no event in the traces "
              "makes the one the other",
              where, state_text(*in[ki].r, keep), host_label(in[ki]), state_text(*in[mi].r, e),
              host_label(in[mi]));
      }
      in[mi].dropped[midx] = true;
      ++res.joined;
      if (e.file && keep.file)
        objects.join(object_classes::file_node(mi, e.file), object_classes::file_node(ki, keep.file));
      if (e.link_group && keep.link_group)
        objects.join(object_classes::group_node(mi, e.link_group),
                     object_classes::group_node(ki, keep.link_group));
    }
  }
  groups.clear();

  return {};
}

// The output's header: every input's hosts, on the one clock.
header_info merged_header(const std::vector<input>& in, int64_t start) {
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

  return h;
}

// The roots: the first one's description is the first input's.
void write_roots(std::vector<input>& in, trace_writer& w) {
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
  FSRR_TRY(refuse(in));
  const int64_t start = one_clock(in);
  FSRR_TRY(place_inputs(in));
  // The initial trees united on the merged clock.
  merge_result res;
  object_classes objects;
  drop_created(in, objects, res);
  FSRR_TRY(join_shared(in, objects, res));

  const header_info h = merged_header(in, start);
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
  write_roots(in, w);
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
