// The SPEC syntax of compare --fs (docs/design.md).
#include <catch2/catch.hpp>

#include "fs_spec.h"

using fsrr::lab::fs_spec;

// The spec, or the test stops with what was wrong with it.
fs_spec parse_fs_spec(std::string_view text) {
  auto s = fsrr::lab::parse_fs_spec(text);
  INFO(text);
  REQUIRE(s.has_value());
  return *s;
}

// The one line a SPEC is refused with; "" if it was not.
std::string refusal(std::string_view text) {
  auto s = fsrr::lab::parse_fs_spec(text);
  return s ? "" : s.error().message;
}

TEST_CASE("a plain kind is one layer with nothing set", "[lab][spec]") {
  const auto s = parse_fs_spec("xfs");
  CHECK(s.name == "xfs");
  REQUIRE(s.layers.size() == 1);
  CHECK(s.layers[0].kind == "xfs");
  CHECK(s.layers[0].mount_opts == "");
  CHECK(s.layers[0].size == 0);
  CHECK(!s.existing());
}

TEST_CASE("options: compress joins the mount options, mkfs and size are kept", "[lab][spec]") {
  const auto s = parse_fs_spec("btrfs:compress=zstd:mount=noatime:mkfs=-n 16k:size=1G");
  REQUIRE(s.layers.size() == 1);
  CHECK(s.layers[0].mount_opts == "compress=zstd,noatime");
  CHECK(s.layers[0].mkfs_opts == "-n 16k");
  CHECK(s.layers[0].size == 1ull << 30);
}

TEST_CASE("a stack: the measured file system first, what its image lives on next", "[lab][spec]") {
  const auto s = parse_fs_spec("ext4:mount=sync@ext4");
  REQUIRE(s.layers.size() == 2);
  CHECK(s.layers[0].mount_opts == "sync");
  CHECK(s.layers[1].kind == "ext4");
  CHECK(parse_fs_spec("ext4@tmpfs").layers[1].kind == "tmpfs");  // an image in RAM
}

TEST_CASE("NAME=DIR is an existing directory, by name", "[lab][spec]") {
  const auto s = parse_fs_spec("nvme=/mnt/nvme");
  CHECK(s.existing());
  CHECK(s.dir == "/mnt/nvme");
  CHECK(s.name == "nvme=/mnt/nvme");
}

TEST_CASE("what a SPEC cannot be is refused with its reason", "[lab][spec]") {
  CHECK(refusal("") == "--fs: empty file system");
  CHECK(refusal("ext4:compress=lzo") == "--fs ext4:compress=lzo: compress= is for btrfs");
  CHECK(refusal("ext4:size=big") == "--fs ext4:size=big: size=big is not a size");
  CHECK(refusal("ext4:journal") == "--fs ext4:journal: option 'journal' is not KEY=VALUE");
  CHECK(refusal("ext4:color=red") ==
        "--fs ext4:color=red: unknown option 'color' (compress, mkfs, mount, size)");
  CHECK(refusal("tmpfs@ext4") ==
        "--fs tmpfs@ext4: tmpfs has no image to put on another file system");
  CHECK(refusal("../x") == "--fs ../x: '../x' is not a file system kind");
}
