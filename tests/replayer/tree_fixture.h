// A source tree with every kind of entry a snapshot must carry, built fresh for a test.
#pragma once

#include <string>

namespace fsrr::test {

struct tree_fixture_counts {
  unsigned files, dirs, symlinks, hardlinks, fifos;
  unsigned long long bytes;  // data bytes of regular files, each inode once
};

// Builds the tree under `root` (an existing empty directory) and returns what it holds.
tree_fixture_counts build_tree_fixture(const std::string& root);

}  // namespace fsrr::test
