// Results a call has because of where it ran, not what it did: the recording's mounts and
// file system features on one side, the target's on the other. A trace recorded on tmpfs
// failed FICLONE (no reflinks there); on xfs the same call succeeds. A move across two
// recorded file systems failed rename with EXDEV; one TARGET joins them. Replaying such a call
// as issued would take the program down a path it never took.
//
// The table below is the whole policy, one row per cause:
//   - recorded failure from the recording's environment: the call is not issued, the recorded
//     result is taken (unless --issue-all), and counted as a difference;
//   - failure from the target's environment where the recording succeeded: the recorded
//     effect is produced another way where there is one (bytes copied through user space, a
//     size set), and counted as a difference, not a mismatch.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "event.h"

namespace fsrr {

enum class env_cause : uint8_t {
  cross_device,  // EXDEV: two file systems, one in the recording or in the replay
  no_clone,      // FICLONE/FICLONERANGE refused: no reflinks, or not between these files
  no_fallocate,  // a fallocate mode the file system lacks (ext3, tmpfs's collapse/insert)
  no_direct_io,  // O_DIRECT refused or misaligned for this file system
  no_xattr,      // xattrs or ACLs not supported (or not this namespace)
  link_limit,    // EMLINK: more links than the file system allows
  name_too_long, // ENAMETOOLONG: a longer name than the file system allows
  privileged,    // a security.*/trusted.* xattr call left out (no --keep-privileged)
  listing_split, // a directory's entries split across getdents calls otherwise, same total
  credentials,   // EACCES to a recorded process that had less than the replay's root
  count
};

struct env_row {
  env_cause cause;
  std::string_view name;  // for reports: "cross_device"
  std::string_view what;  // for the README and reports
};
std::span<const env_row> env_table();
std::string_view name(env_cause c);

// The cause of `err` (a negative errno) for event `e`, if it is one of the table's.
bool env_cause_of(const event& e, int64_t err, env_cause& cause);

}  // namespace fsrr
