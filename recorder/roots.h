// The roots traced processes have (fs->root: a chroot, a container's root), held open so that
// the recorder looks at what they see: the initial tree, the directory a name resolves in,
// the mounts. A process announcing a root the recorder does not hold waits, stopped, until it
// holds it (FSRR_PAUSE_ROOT): its short life cannot take the root away first.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "fsrr.h"
#include "pseudo_fs.h"
#include "result.h"
#include "unique_fd.h"

namespace fsrr::recorder {

// A root as both sides name it (struct fsrr_root): by mount, inode and mount namespace. The
// device is kept aside, for the trace: the kernel's s_dev is not statx's on btrfs.
struct root_key {
  uint64_t ino = 0;
  uint32_t mnt_id = 0;
  uint32_t mnt_ns = 0;
  bool operator==(const root_key&) const = default;
  static root_key of(const fsrr_root& r) { return {r.ino, r.mnt_id, r.mnt_ns}; }
  fsrr_root bpf() const { return {ino, 0, mnt_id, mnt_ns, 0}; }  // the `roots` map's key
};

struct root_dir {
  root_key key;
  uint64_t dev = 0;    // user-space dev_t of the directory, 0 if unknown
  unique_fd fd;        // O_PATH directory; none: its processes were gone before it could be opened
  unique_fd ns_fd;     // its mount namespace, held so that its mounts outlive its processes
  std::string where;   // as fsrr sees it ("/srv/jail"; "/" for another mount namespace's top)
  bool mount_root = false;  // the root of its mount (no chroot below it)
  mount_table mounts;  // the processes' mounts, mount points from this root
};

class root_registry {
 public:
  // Holds fsrr's own root.
  static result<root_registry> open();
  // Not while another thread uses `o`. Roots keep their addresses.
  root_registry(root_registry&& o) noexcept;
  root_registry& operator=(root_registry&&) = delete;

  // The root process `pid` (as fsrr sees it) has now, opened and held if new; nullptr if the
  // process is gone. Thread-safe, as is everything here.
  const root_dir* grab(pid_t pid);
  // The root a record names: held already, or grabbed from `pid` if it still has it, or else
  // known by its key alone (fd -1).
  const root_dir& find_or_grab(const root_key& key, pid_t pid);
  const root_dir& self() const { return *self_; }

  // Told each root as it is added (the programs' `roots` map).
  void on_new(std::function<void(const root_key&)> f);

 private:
  root_registry() = default;
  const root_dir* find_locked(const root_key& key) const;
  const root_dir& add_locked(root_dir d);

  mutable std::mutex mu_;
  std::deque<root_dir> dirs_;  // never moves an element: callers keep pointers
  const root_dir* self_ = nullptr;
  std::function<void(const root_key&)> on_new_;
  // Roots held open at most: past that (a long --all over many namespaces), a new root is
  // known by its key alone and its processes do not wait for it.
  static constexpr size_t max_held = 256;
};

}  // namespace fsrr::recorder
