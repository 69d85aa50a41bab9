// Traces of the workloads fsrr is for, written the way the recorder records them: cp -a of a
// small tree /src of files f0, f1, ... and rsync -a of the same tree (generator, sender and
// receiver processes).
#pragma once

#include <cstdint>
#include <string>

namespace fsrr::test {

// Size of /src/f<i> in the recorded trees: 1 KiB, 4 KiB, 10 KiB, ~100 KB, empty, repeating.
uint64_t file_size(int i);

// cp -a /src /dst by coreutils 9 (cp_model.h): one thread, copy_file_range after a failed
// reflink, the mode given by an access ACL; atime and mtime 1,600,000,000 s.
void record_cp(const std::string& trace, int files);

// rsync -a /src/ /dst/: the receiver writes a temporary name and renames it; the generator's
// last pass sees the final names.
void record_rsync(const std::string& trace, int files);

}  // namespace fsrr::test
