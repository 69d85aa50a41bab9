// export --fio: a trace's reads and writes as a fio job file and one iolog (version 3) per
// recorded thread, so that `fio DIR/fsrr.fio` replays them with fio: the same files, offsets,
// sizes and order per thread, at their recorded times (fio's replay_no_stall=1 drops those).
//
// Everything fio touches lives beneath DIR/data: the trace's files are DIR/data/f1, f2, ...
// (never a recorded path; named so in the iologs, since fio 3.33 crashes replaying an iolog
// with directory= set), and a first job, `layout`, writes the
// files of the initial tree to their sizes before the others start. copy_file_range and
// sendfile become a read of their source and a write of their destination; fsync and
// fdatasync fio's sync and datasync.
#pragma once

#include <cstdint>
#include <string>

#include "trace_reader.h"

namespace fsrr::transform {

struct fio_export_result {
  uint64_t jobs = 0;            // replaying jobs (threads with I/O), beside `layout`
  uint64_t files = 0;
  uint64_t reads = 0, writes = 0, syncs = 0;
  uint64_t bytes_read = 0, bytes_written = 0;  // what the jobs will move
  uint64_t layout_bytes = 0;                   // what `layout` writes first
};

// DIR must not exist, or be an empty directory.
result<fio_export_result> export_fio(trace_reader& in, const std::string& dir);

}  // namespace fsrr::transform
