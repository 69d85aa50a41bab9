// What the end-to-end tests share: the environment check, and reading what programs wrote.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "loop_fs.h"  // run(command)

namespace fsrr::test {

// Recording needs root and kernel BTF. Without them a test returns early with a warning,
// except under CI=true, where that is a failure.
bool can_record();

std::string slurp(const std::string& path);

// Two recordings made at once by `fsrr`, as two hosts sharing `dir`/shared would make them,
// and merged. Host a: writes "a\n" to local/log (a directory each host would have of its own,
// like /tmp), three writers append 20 lines each to shared/log, then a makes shared/from-a and
// shared/a-done. Host b: polls for a-done (its stats that found nothing come before a's
// create), appends "b\n" to local/log (here the one a wrote: one machine), then three writers
// of its own append to the shared log and b renames from-a to renamed-by-b. A step that fails
// fails the test, with the logs.
struct two_hosts {
  std::string shared, local, a, b, merged, merge_log;
};
two_hosts record_two_hosts(const std::string& dir, const std::string& fsrr);
void write_file(const std::string& path, size_t bytes, char fill = 'e');

// Records `command` (run by sh in `dir`) into dir/t.trace: complete, 0 lost, at least
// `min_events`. Then replays it (--timing afap, TARGET given as dir/FS.json's "target") and
// verifies it on tmpfs, and as root on fresh ext4, xfs and btrfs images: 0 mismatches on each
// (differences only of environment.h's causes), verify clean. The reports stay in dir/FS.json.
// Returns `fsrr info --json` of the trace.
nlohmann::json record_and_replay(const std::string& dir, const std::string& command,
                                 uint64_t min_events);

// Anything of `dir` still mounted, or a loop device backed by a file beneath it: "" if none.
std::string left_behind(const std::string& dir);

}  // namespace fsrr::test
