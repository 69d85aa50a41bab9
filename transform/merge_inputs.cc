// merge's stages before its output (merge_inputs.h): refusals, one clock, each input placed and
// scanned, the trees' paths that one input created or several found united.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "merge_inputs.h"
#include "system_paths.h"

namespace fsrr::transform::merge_detail {
namespace {

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
      if (h && !in.place.split && e.kind != op::mkdir && e.kind != op::mkdirat &&
          e.kind != op::mknod && e.kind != op::mknodat && e.kind != op::bind &&
          in.split->local(made_path(e)))
        in.own_files.push_back(h);
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

}  // namespace

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
result<void> place_inputs(std::vector<input>& in, const std::vector<std::string>& shared) {
  std::vector<std::string> united(system_prefixes.begin(), system_prefixes.end());
  united.insert(united.end(), shared.begin(), shared.end());
  const prefix_tree prefixes(united);
  // Roots: every input's first root is the output's first (paths stay as recorded); further
  // roots (chroots, containers) are roots of their own.
  uint32_t out_roots = 1;
  size_t host_base = 0;
  uint32_t fd_base = 0;
  const uint64_t seed = random_seed();
  // The output's devices, before anything is read or written: each input's (host, device)
  // pairs are its own (its hosts are), and a reader keeps a file's device as a 16-bit index.
  uint64_t devices = 0;
  for (input& x : in) {
    std::vector<std::pair<uint16_t, uint64_t>> seen;
    seen.reserve(x.r->file_count());
    for (size_t f = 1; f <= x.r->file_count(); ++f) {
      const file_info fi = x.r->file(static_cast<file_id>(f));
      if (seen.empty() || seen.back() != std::pair{fi.host, fi.dev}) seen.emplace_back(fi.host, fi.dev);
    }
    std::sort(seen.begin(), seen.end());
    devices += static_cast<uint64_t>(std::unique(seen.begin(), seen.end()) - seen.begin());
  }
  if (devices > 0xffff)
    return failure("merge: the traces name {} devices in all; a trace holds at most 65,535 (merge "
                   "fewer at a time, or slice each to the paths that matter first)",
                   devices);
  for (input& x : in) {
    x.place.roots = {1};
    for (size_t k = 1; k < x.r->roots().size(); ++k) x.place.roots.push_back(++out_roots);
    if (host_base + x.hosts > 0xffff) return failure("merge: more than 65,535 hosts in all");
    x.place.host_base = static_cast<uint16_t>(host_base);
    host_base += x.hosts;
    x.split = std::make_unique<path_split>(*x.r, prefixes);
    if (!shared.empty()) {  // its host's own paths: a root of their own after its others
      x.place.split = x.split.get();
      x.place.host_root = ++out_roots;
    }
    x.hash = std::make_unique<path_hasher>(*x.r, seed, x.place.roots, x.place.split,
                                           x.place.host_root);
    const tree_table& tree = x.r->tree();
    x.tree_at.reserve(tree.size());
    uint32_t idx = 0;
    for (const tree_entry& e : tree) {
      const uint64_t h = (*x.hash)(e.path);
      x.tree_at.emplace(h, idx);
      if (e.file != no_id) x.tree_file.emplace(e.file, idx);
      if (!x.place.split && (S_ISREG(e.mode) || S_ISLNK(e.mode)) && x.split->local(e.path))
        x.own_files.push_back(h);  // with --shared, never united
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

uint64_t count_united(const std::vector<input>& in) {
  std::unordered_map<uint64_t, size_t> first;  // hash -> the first input naming it, + 1
  uint64_t n = 0;
  for (size_t i = 0; i < in.size(); ++i)
    for (uint64_t h : in[i].own_files) {
      size_t& by = first[h];
      if (!by)
        by = i + 1;
      else if (by != i + 1 && by != SIZE_MAX) {
        ++n;
        by = SIZE_MAX;  // counted
      }
    }
  return n;
}

// An entry of a path another input created before this one first used it is that create's
// file (the latest such create: a log rotated away and made again), left to the create.
void drop_created(std::vector<input>& in, object_classes& objects, tree_counts& res) {
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
result<void> join_shared(std::vector<input>& in, object_classes& objects, tree_counts& res) {
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

}  // namespace fsrr::transform::merge_detail
