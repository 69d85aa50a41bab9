// A small trace with one event of every op (every field it carries set to a distinct value),
// several threads, a tree of every entry kind and every counter: the fixture of the format
// tests.
#pragma once

#include <string>
#include <vector>

#include "trace_writer.h"

namespace fsrr::test {

struct sample {
  std::vector<event> events;      // in the order they were appended
  std::vector<tree_entry> tree;
  std::vector<std::string> paths;  // path_string of each event's path, for checks
};

// Writes the sample trace to `path`; `finish` false leaves it as a killed writer would.
sample write_sample(const std::string& path, const writer_options& options, bool finish = true);

// The header every sample trace carries.
header_info sample_header();

}  // namespace fsrr::test
