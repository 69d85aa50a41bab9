// Traces of the workloads fsrr is for, written the way the recorder records them: cp -a of a
// small tree and rsync -a of the same tree (generator, sender and receiver processes).
#pragma once

#include <cstdint>
#include <string>

namespace fsrr::test {

// Size of /src/f<i> in the recorded trees: 1 KiB, 4 KiB, 10 KiB, ~100 KB, empty, repeating.
uint64_t file_size(int i);

// cp -a /src /dst by coreutils 9: one thread, copy_file_range after a failed reflink.
void record_cp(const std::string& trace, int files);

// rsync -a /src/ /dst/: the receiver writes a temporary name and renames it; the generator's
// last pass sees the final names.
void record_rsync(const std::string& trace, int files);

}  // namespace fsrr::test
