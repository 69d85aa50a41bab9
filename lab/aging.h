// Aged file systems: a fresh one filled and churned the way years of use leave it, so that a
// comparison measures the candidate as it will be, not as mkfs made it (Geriatrix, ATC'18:
// fresh images overstate performance and can reorder file systems; Conway et al., FAST'17).
//
// A profile `fill=PCT[,churn=N][,sizes=DIST][,seed=S]`: files whose sizes follow DIST are
// written beneath DIR/.fsrr-aged until the file system is PCT full; then N rounds each write
// new ones (with appends to survivors in between) until it is nearly full — PCT plus 90% of
// the rest, at most 95% — and delete seeded random files until it is PCT full again, so that
// its free space lies in the holes pruning left, as a pruned backup target's does. What is
// written follows from the profile and the seed alone (names, sizes, order, bytes); the
// file system's own accounting decides only where the filling stops, at fixed steps, so the
// same profile and seed on the same SPEC leave the same files.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace fsrr::lab {

struct age_profile {
  double fill = 0;         // of the capacity, 0..0.98; 0: none (fresh)
  unsigned churn = 0;      // rounds
  std::string sizes = "backup";  // backup | home | maildir | mixed | trace:FILE
  uint64_t seed = 0;
  // Or a recorded workload replayed `rounds` times, each into a generation of its own,
  // keeping the last `keep` (a backup rotation, as rsnapshot keeps one).
  std::string replay;
  unsigned rounds = 1, keep = 1;
  std::string text = "none";  // as given
  bool aged() const { return fill > 0 || !replay.empty(); }
};

// "none", fill=PCT[,churn=N][,sizes=DIST][,seed=S], or replay=TRACE[,rounds=N][,keep=K][,seed=S];
// an error in one line.
result<age_profile> parse_age_profile(std::string_view text);

// File sizes drawn from a named distribution; `trace:FILE` draws from the regular files of a
// trace's initial tree.
class size_distribution {
 public:
  static result<size_distribution> named(const std::string& name);
  uint64_t draw(uint64_t random) const;  // a size for a uniform 64-bit random number
  uint64_t largest() const;              // the largest size it may draw

 private:
  struct bucket {
    double weight = 0;     // cumulative, to 1
    uint64_t low = 0, high = 0;  // log-uniform in [low, high]
  };
  std::vector<bucket> buckets_;
  std::vector<uint64_t> sizes_;  // trace:FILE: drawn uniformly
};

struct age_result {
  uint64_t files = 0, bytes = 0;      // beneath .fsrr-aged at the end
  uint64_t written = 0, deleted = 0;  // files over the whole aging
  uint64_t appends = 0;
  double fill = 0;                    // used / capacity at the end
  bool full_early = false;            // ENOSPC (no room, or no inode) before the fill
  uint64_t wall_ns = 0;
};

// Ages the file system mounted at `dir`. `progress` gets a line now and then. A replay profile
// replays with data seeded by the profile's seed, each generation in DIR/.fsrr-aged/gen-NNNN
// (its initial tree and what the workload wrote there); running out of room ends it early.
result<age_result> age(const std::string& dir, const age_profile& profile,
                       const std::atomic<bool>* cancel = nullptr,
                       const std::function<void(const std::string&)>& progress = {});

// How a set of files lies on disk (FIEMAP): the layout score of Conway et al. — the share of
// blocks (after each file's first) that follow their predecessor on disk — and extents.
struct layout_stats {
  uint64_t files = 0, blocks = 0, extents = 0;
  uint64_t contiguous = 0, pairs = 0;  // blocks contiguous with their predecessor, of pairs
  uint64_t bytes = 0;
  double score() const { return pairs ? double(contiguous) / double(pairs) : 1.0; }
  double extents_per_file() const { return files ? double(extents) / double(files) : 0.0; }
  double extents_per_mib() const { return bytes ? extents / (bytes / 1048576.0) : 0.0; }
};
// Every regular file beneath `dir` (not crossing into other file systems), but those beneath
// `dir/skip` (compare: the aging's own files, beside the workload's).
result<layout_stats> layout_of(const std::string& dir, const std::string& skip = "");
// One file's extents in logical order, as (physical start, length) in bytes, added to `s`.
void add_extents(layout_stats& s, const std::vector<std::pair<uint64_t, uint64_t>>& extents,
                 uint64_t block = 4096);

// Free space in pieces, from the file system's own tool on its (mounted) device: the number
// of free extents and their sizes, by power-of-two bucket of blocks (xfs: 4 KiB blocks
// assumed). -1 where the kind has no such tool here (btrfs, tmpfs). `device`: the image or
// device, unmounted (a mounted one's bitmaps on disk may be behind).
struct free_space {
  int64_t fragments = -1;
  std::vector<std::pair<uint64_t, uint64_t>> histogram;  // (bucket's least bytes, count)
};
free_space free_space_of(const std::string& kind, const std::string& device);

}  // namespace fsrr::lab
