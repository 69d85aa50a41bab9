// The initial tree of a recording: every object the workload used that existed before it
// touched it, as it was before that first touch, with the directories above it.
//
// The first touch is seen after the fact. What the kernel reported at that touch (inode
// state at an open or first sight of an fd, the stat buffer of a stat call) is the state
// before it, and wins; xattrs, symlink targets and sparse extents come from looking at
// the object when the event is processed, milliseconds later. Objects the workload removed
// before then, or changed in their first touch (O_TRUNC, chmod), keep only what the event
// says: pass --snapshot DIR for those.
//
// The workload also saw what it did not touch: the entries of a directory it listed, and the
// directories a failed lookup searched. Those are settled a second of events later, once the
// entries the workload touched or made itself are known.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "event.h"
#include "path_table.h"
#include "trace_writer.h"

namespace fsrr::recorder {

// An object's state as the kernel reported it at the touch.
struct observed {
  uint64_t dev = 0;  // user-space dev_t
  uint64_t ino = 0;
  uint32_t mode = 0;
  uint32_t uid = 0, gid = 0, nlink = 1;
  uint64_t size = 0, blocks = 0;  // blocks: 512-byte units
  int64_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0;
  bool full = false;  // uid..ctime are known, not only identity, mode and size
  file_id file = no_id;
};

class initial_tree {
 public:
  // `realtime_base`: CLOCK_REALTIME ns at trace time 0, for comparing with inode times.
  initial_tree(trace_writer& w, path_table& paths, int64_t realtime_base);
  ~initial_tree();
  // How an inode the tree finds by itself (a listed directory's entries) gets the file id the
  // trace's events name it by: replay knows its bytes by that id.
  void identify_files(std::function<file_id(uint64_t dev, uint64_t ino, uint32_t mode)> f) {
    file_of_ = std::move(f);
  }

  // Directories snapshotted up front (--snapshot): nothing beneath them is added again.
  void cover(path_id dir);
  // --path: only objects `keep` says yes to join the tree (with their directories).
  void keep_only(std::function<bool(path_id)> keep) { keep_ = std::move(keep); }
  // The workload made `p`: not part of the initial tree, though its directory is.
  void created(path_id p);
  // A call of the workload found no `p` (ENOENT) before it was known: whatever is there later
  // was made by the workload, by a call the recorder does not see (a Unix socket's bind) or
  // by another program, and is not part of the tree as it was before.
  void absent(path_id p);
  // The workload renamed `from` to `to`, which may be a directory: what is found beneath `to`
  // later was beneath `from` before (or is the workload's own, if it made `from`).
  void moved(path_id from, path_id to);
  // `p` existed before the workload touched it. `where` is where it is now, if it moved
  // (rename); `type_hint` (S_IFREG, S_IFDIR) is used when nothing else tells the type.
  void existed(path_id p, const observed* o = nullptr, path_id where = no_id,
               uint32_t type_hint = 0);
  // A lookup of `p` failed (ENOENT, ENOTDIR) at trace time `ts`: the directories above it
  // that existed were part of the tree the workload saw (a shell's PATH search, a config
  // file probed and not found), so that replay fails the same lookup the same way. Which
  // directory that is gets settled a second of events later (settle_pending), once the
  // workload had the time to show it made it itself. `skip(dir)`: never take it.
  template <typename Skip>
  void lookup_failed(path_id p, uint64_t ts, Skip skip) {
    if (p == no_id) return;
    const path_id dir = paths_.parent(p);
    if (dir == p || settled(dir) || skip(dir) || !wanted(dir)) return;
    queue(dir, ts, pending::lookup);
  }
  // `p` was there at trace time `ts`, not a symlink, and most likely a directory (readlink's
  // EINVAL in a realpath walk): looked at when lookups are settled, added if a directory.
  void probably_dir(path_id p, uint64_t ts) {
    if (p != no_id && !settled(p) && wanted(p)) queue(p, ts, pending::lookup);
  }
  // The workload read directory `dir` (getdents) at trace time `ts`: the entries it held
  // then were part of the tree the workload saw, touched or not, so that replay lists the
  // same names. Settled a second of events later, when the entries the workload touched
  // (or made) are known; of the others, those unchanged since well before the read (ctime)
  // are added.
  void listed(path_id dir, uint64_t ts) {
    if (dir == no_id || (dir < created_.size() && created_[dir]) || !wanted(dir)) return;
    if (dir >= listed_.size()) listed_.resize(dir + 1024);
    if (listed_[dir]) return;  // once: what a directory held before is what it held first
    listed_[dir] = 1;
    queue(dir, ts, pending::listing);
  }
  // The workload read symlink `p`'s target: a link of the tree that was gone before the
  // recorder could read it gets its target from there (an mv that copies, then removes).
  void link_read(path_id p, std::string_view target);
  // The workload found xattr `name` of `p` absent (ENODATA), or set it first: an entry that
  // changed between the touch and the recorder's look does not keep it from that look.
  void xattr_absent(path_id p, string_id name);
  // Settles what was queued before `ts` - 1 s; all of it with UINT64_MAX.
  void settle_pending(uint64_t ts);

 private:
  bool settled(path_id p);  // known, or beneath a covered directory
  // Where `p` was before the workload moved directories above it; no_id if the workload
  // made one of them, so that nothing beneath it is older than the workload.
  path_id before_moves(path_id p);
  void ensure_parents(path_id p);
  void add(path_id p, const observed* o, path_id where, uint32_t type_hint);
  // A symlink of the tree leads to what existed then: a chain of links (Debian's
  // /usr/bin/lzma -> /etc/alternatives/lzma -> /usr/bin/xz) is there to follow on replay.
  void add_link_target(path_id link, int dirfd, const char* name);
  int dir_fd(path_id dir);
  enum class pending : uint8_t { lookup, listing };
  void queue(path_id dir, uint64_t ts, pending kind);
  void settle_lookup(path_id dir);
  void settle_listing(path_id dir, int64_t realtime_ns);

  bool wanted(path_id p) const { return !keep_ || keep_(p); }

  trace_writer& w_;
  path_table& paths_;
  int64_t realtime_base_;
  std::function<bool(path_id)> keep_;
  std::vector<uint8_t> known_;  // by path id
  std::set<path_id> covered_;
  struct queued {
    path_id dir;
    uint64_t ts;
    pending kind;
  };
  std::deque<queued> pending_;    // failed lookups and listings, oldest first
  std::vector<uint8_t> queued_;   // by path id: a lookup in pending_
  std::vector<uint8_t> listed_;   // by path id: a listing queued or done
  std::vector<uint8_t> created_;  // by path id: made by the workload (or moved there)
  std::unordered_map<path_id, path_id> moved_from_;  // a rename's target -> its source
  // Links of the tree whose target could not be read: held back a second for a readlink.
  struct unread_link {
    tree_entry entry;
    uint64_t ts;
  };
  std::unordered_map<path_id, unread_link> unread_links_;
  // Entries with xattrs, looked at after the workload changed them (ctime): held back a
  // second for the workload's xattr calls to say which of those it made itself.
  std::unordered_map<path_id, unread_link> changed_xattrs_;
  uint64_t now_ = 0;  // the latest settle_pending time
  int link_depth_ = 0;        // links being followed by add_link_target
  path_id open_dir_ = no_id;  // the directory dir_fd() holds open
  int open_dir_fd_ = -1;
  std::function<file_id(uint64_t, uint64_t, uint32_t)> file_of_;
};

}  // namespace fsrr::recorder
