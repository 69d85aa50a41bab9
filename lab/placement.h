// What lives where in a comparison, as in the seeds (rsync *from* a fixed disk *to* the file
// system under test): the directories whose files the workload only reads (a copy's source)
// are prepared on a fixed source file system; everything it writes beneath, on the file
// system under test. Decided from the trace.
#pragma once

#include <string>
#include <vector>

#include "result.h"
#include "trace_reader.h"

namespace fsrr::lab {

struct placement {
  // Directories of the initial tree (placed paths: trace_reader::placed_path) with nothing
  // written beneath them and something written beside them: they go on the source file system.
  std::vector<std::string> on_source;
  // The topmost directories written beneath: on the file system under test (for the report).
  std::vector<std::string> on_test;
};

// A trace that writes nothing keeps everything on the file system under test (reading is
// then what is measured). An error if the trace's events are damaged.
result<placement> decide_placement(trace_reader& trace);

}  // namespace fsrr::lab
