// What merge (merge.h) knows of its inputs before it writes anything — each input's paths
// hashed where they land, its tree indexed, what its events create and first use — and the
// stages that work it out (merge_inputs.cc). Private to transform/.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "clock_line.h"
#include "hash.h"
#include "path_split.h"
#include "rewrite.h"
#include "trace_reader.h"

namespace fsrr::transform::merge_detail {

inline constexpr uint64_t never = std::numeric_limits<uint64_t>::max();
// How far two hosts' clocks may disagree when merge decides which of two events came first:
// NTP keeps hosts within a few milliseconds. On one host the clock is one and exact.
inline constexpr uint64_t clock_slack_ns = 10'000'000;

inline uint64_t plus_slack(uint64_t ts) { return ts > never - clock_slack_ns ? never : ts + clock_slack_ns; }

// Paths of all inputs, hashed by where they are placed in the output: the same placed path of
// two inputs has the same hash. Keyed by a random seed, so that a trace cannot choose names
// that collide.
class path_hasher {
 public:
  // With `split`, a path it calls its host's own is hashed as placed beneath `host_root`.
  path_hasher(trace_reader& r, uint64_t seed, const std::vector<uint32_t>& out_roots,
              path_split* split = nullptr, uint32_t host_root = 0)
      : r_(r),
        seed_(seed),
        roots_(out_roots),
        split_(split),
        host_root_(host_root),
        hash_(r.path_count() + 1, 0) {}

  uint64_t operator()(path_id p) {
    const uint64_t h = as_recorded(p);
    if (!h || !split_ || !split_->local(p)) return h;
    const uint64_t own = mix64(h, mix64(seed_ ^ 0x686f7374, host_root_));  // "host"
    return own ? own : 1;
  }

 private:
  uint64_t as_recorded(path_id p) {
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
  path_split* split_;
  uint32_t host_root_;
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
  // Paths beneath neither a system directory nor a --shared prefix: its host's own with
  // --shared (place.split), counted when several inputs name one without.
  std::unique_ptr<path_split> split;
  std::unique_ptr<path_hasher> hash;
  std::vector<uint64_t> own_files;  // hashes of such files and symlinks: its tree, its creates
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

// What the trees' union counted (merge_result's created, joined, differing_system).
struct tree_counts {
  uint64_t created = 0, joined = 0, differing_system = 0;
  uint64_t united = 0;  // paths of `own_files` several inputs name
};

// The stages before the output, in order (merge.cc runs them).
// Refusals first, nothing written for them: one recording twice, different anonymization
// keys, too many hosts.
result<void> refuse(std::vector<input>& in);
// One clock, realtime from the earliest start: each input's line to it. Returns that start.
int64_t one_clock(std::vector<input>& in);
// Where each input goes in the output (roots, hosts, fd tables), its paths hashed and its
// tree indexed, and its events scanned for what they create and when they first use a path.
// `shared`: merge --shared's prefixes (none: every path is united, as recorded).
result<void> place_inputs(std::vector<input>& in, const std::vector<std::string>& shared);
// How many files outside the system directories (and the shared prefixes) several inputs name.
uint64_t count_united(const std::vector<input>& in);
// An entry of a path another input created before this one first used it is that create's
// file (the latest such create: a log rotated away and made again), left to the create.
void drop_created(std::vector<input>& in, object_classes& objects, tree_counts& res);
// A path several inputs found is one entry and one object, the one the input that used it
// first saw, if their states agree or an event of another input explains the difference.
result<void> join_shared(std::vector<input>& in, object_classes& objects, tree_counts& res);

}  // namespace fsrr::transform::merge_detail
