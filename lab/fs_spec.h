// A file system to compare on, as the command line names it (DESIGN: SPEC):
//   KIND[:opt=value...]  tmpfs, ext2, ext3, ext4, xfs, btrfs, or any KIND that mkfs.KIND exists
//                        for; options compress=ALG (btrfs), mkfs=OPTS, mount=OPTS, size=SIZE
//   KIND@KIND...         the first's image lives on the second (seed 002: ext4 in a file on ext4)
//   NAME=DIR             an existing empty directory, used as it is (a real disk)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace fsrr::lab {

struct fs_layer {
  std::string kind;        // "ext4"
  std::string mkfs_opts;   // extra mkfs arguments, split on blanks
  std::string mount_opts;  // "-o" options (compress=ALG joins them)
  uint64_t size = 0;       // image (or tmpfs) size; 0: from the trace
};

struct fs_spec {
  std::string name;              // as given: the row's name
  std::vector<fs_layer> layers;  // the file system measured first, then what it lives on
  std::string dir;               // NAME=DIR; no layers then
  bool existing() const { return !dir.empty(); }
};

// The spec, or one line naming what is wrong with it.
result<fs_spec> parse_fs_spec(std::string_view text);

// "64M", "1G", "4096" -> bytes; 0 if malformed.
uint64_t parse_bytes(std::string_view text);

}  // namespace fsrr::lab
