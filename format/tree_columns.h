// The initial tree as columns of a block: written and read here, in one place, so that the
// delta coding of each column (trace.fbs, table Tree) has one definition.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "event.h"
#include "result.h"
#include "trace_generated.h"
#include "tree_table.h"

namespace fsrr {

flatbuffers::Offset<fb::Tree> write_tree(flatbuffers::FlatBufferBuilder& fbb,
                                         const std::vector<tree_entry>& tree);

// How many entries each table holds so far: a tree entry may only refer to those.
struct table_sizes {
  size_t paths, strings, files;  // including the unused id 0
};

// Appends the block's entries to `out`; fails if the columns are inconsistent or refer to
// unknown table entries.
result<void> read_tree(const fb::Tree& t, const table_sizes& known, tree_table& out);

}  // namespace fsrr
