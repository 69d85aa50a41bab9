// File systems that hold no stored data (procfs, sysfs, cgroup, debugfs, devpts, pipes,
// sockets, anonymous inodes, ...): operations on them are counted, never replayed, and their
// files never enter the initial tree. An fd's file system comes from the super block magic
// the BPF programs capture; a name's from the mount it lies under.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "event.h"
#include "path_table.h"

namespace fsrr::recorder {

bool pseudo_fs(uint64_t magic);
// Every such magic: the BPF programs get the list, so both sides agree.
std::span<const uint32_t> pseudo_fs_magics();

// Which mounts hold pseudo file systems, and so which paths lie on one.
class mount_table {
 public:
  // The mounts a process sees, from its /proc/PID/mountinfo: mount points from its root.
  static mount_table of(const std::string& mountinfo);
  static mount_table of_self() { return of("/proc/self/mountinfo"); }

  // A mount at `mount_point` (absolute); a later mount at the same place hides an earlier one.
  void add(std::string_view mount_point, std::string_view fs_type);
  // Whether `p` lies on a pseudo file system; the answer is cached per path id. Paths are
  // taken from their top (root_path, or another root's), whose mounts these are.
  bool pseudo(const path_table& paths, path_id p);
  // Whether a stat's st_dev is that of a pseudo file system's mount (a stat that followed
  // /etc/mtab -> ../proc/self/mounts reached procfs).
  bool pseudo_dev(uint64_t dev) const { return pseudo_devs_.count(dev) != 0; }

 private:
  struct node {
    std::unordered_map<std::string, uint32_t> children;
    int8_t pseudo = -1;  // -1: no mount here; 0/1: the mount here is storage/pseudo
  };
  static constexpr int32_t no_node = -1;
  void classify(const path_table& paths, path_id p);

  std::unordered_set<uint64_t> pseudo_devs_;  // user-space dev_t
  std::vector<node> nodes_{1};  // a trie of mount points by component; 0 is "/"
  // By path id: the trie node at that path (no_node below every mount point), and 1 + whether
  // it is pseudo (0: not computed yet).
  std::vector<int32_t> node_of_;
  std::vector<uint8_t> class_of_;
};

}  // namespace fsrr::recorder
