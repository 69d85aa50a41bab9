// Where a replay may act: TARGET and the --map destinations, nothing else. A trace path maps
// to one of these roots plus a relative path of plain components; every open goes through
// openat2(RESOLVE_BENEATH), so neither '..' in a trace nor a symlink planted by an earlier op
// can lead outside. A trace is untrusted input.
//
// A symlink the kernel refuses to follow beneath a root (an absolute one, or one whose '..'
// climbs above the root's directory) is followed as the recorded process followed it, in the
// trace's namespace: its target is a trace path, located again, so Debian's
// /usr/bin/lzma -> /etc/alternatives/lzma leads to TARGET/etc/alternatives/lzma (or where a
// --map puts /etc), and a link to /etc/passwd to TARGET/etc/passwd, never the host's.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace fsrr {

struct map_rule {
  std::string from;  // absolute path prefix in the trace, e.g. "/data"
  std::string to;    // directory it replays into, e.g. "/mnt/xfs/data"
};

// An absolute path of plain components: no empty, "." or ".." one ("/" is plain). Only such
// a path can be a map's FROM: a prefix is matched as a string, before locate() looks at the
// rest.
bool plain_path(std::string_view p);

// "FROM=TO", or why it is malformed.
result<map_rule> parse_map(std::string_view text);

// How a trace's placed paths (trace_reader::placed_path) lie beneath TARGET: `depth` leading
// components name the recorded root ("/rootN" with several roots, else none), and the roots a
// `merge --shared` gave each host's own paths go to "hosts/NAME" instead of "rootN".
struct root_layout {
  unsigned depth = 0;
  struct renamed {
    std::string top;  // "/root3"
    std::string rel;  // "hosts/vm1"
  };
  std::vector<renamed> hosts;
};
class trace_reader;
root_layout root_layout_of(trace_reader& trace);

class target_root {
 public:
  // Opens TARGET and each map destination (they must exist and be directories).
  // `root_depth`: how many leading components of a trace path name the recorded root the
  // path belongs to (1 for a trace of several roots, placed under /rootN; else 0): an
  // absolute symlink starts again there, and '..' stops there.
  static result<target_root> open(const std::string& target,
                                  const std::vector<map_rule>& maps = {},
                                  unsigned root_depth = 0);
  // The same, for a trace laid out as `layout` says: a map's FROM may name a host's root as
  // "/hosts/NAME".
  static result<target_root> open(const std::string& target, const std::vector<map_rule>& maps,
                                  const root_layout& layout);
  ~target_root();
  target_root(target_root&& o) noexcept;
  target_root& operator=(target_root&&) = delete;

  struct location {
    int root = -1;    // fd of the root directory it lives under (owned by target_root)
    std::string rel;  // "a/b/c": plain components only; "" is the root itself
  };
  // nullopt for a path that is not absolute or holds an empty, "." or ".." component.
  std::optional<location> locate(std::string_view trace_path) const;

  // openat2(root, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): the fd, or -errno. Where
  // that meets a symlink leading outside its root (EXDEV), the path is resolved again in the
  // trace's namespace (follow_links) and opened there.
  int open(const location& at, int flags, mode_t mode = 0, uint64_t extra_resolve = 0) const;
  // The parent directory of `at` (O_PATH | O_DIRECTORY, confined) and the last component.
  // For the ops that act on a name without following it (mkdirat, unlinkat, renameat2,
  // symlinkat, linkat, mknodat, fchownat/utimensat with AT_SYMLINK_NOFOLLOW). -errno on error;
  // -EINVAL for the root itself.
  int open_parent(const location& at, std::string& name) const;
  // mkdir -p of `at` beneath its root: missing directories get `mode`. 0 or -errno.
  int make_dirs(const location& at, mode_t mode) const;

  // A trace path as reports show it: a host's own root (merge --shared) as "/hosts/NAME/..."
  // rather than "/rootN/...".
  std::string shown(std::string_view trace_path) const;

  const std::string& path() const { return path_; }
  // The directory a root fd of locate() was opened from: TARGET or a map's TO.
  const std::string& path_of(int root) const;
  // True if TARGET holds nothing (replay refuses a non-empty TARGET without --force).
  bool empty() const;

 private:
  explicit target_root(std::string path) : path_(std::move(path)) {}
  int open_beneath(const location& at, int flags, mode_t mode, uint64_t extra_resolve) const;
  // `at` with every symlink on the way replaced by where it leads as a trace path (the last
  // component too if `follow_last`), each read on the target; nullopt and `err` (-ELOOP) if
  // there is no end to it.
  std::optional<location> follow_links(const location& at, bool follow_last, int& err) const;
  std::string trace_path(const location& at) const;
  std::string path_;
  unsigned root_depth_ = 0;
  std::vector<root_layout::renamed> hosts_;
  int fd_ = -1;
  struct mapped {
    std::string from;
    int fd;
    std::string to;
  };
  std::vector<mapped> maps_;  // longest `from` first
};

}  // namespace fsrr
