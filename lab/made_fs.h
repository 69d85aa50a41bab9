// The file systems compare runs on: made fresh for each run on images fsrr creates itself
// (mkfs only ever touches those), mounted on directories of its own, and gone again with the
// object, on success, error or interruption alike. NAME=DIR is an existing empty directory,
// used as it is; what the run left in it is removed, nothing else.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fs_spec.h"
#include "result.h"

namespace fsrr::lab {

class made_fs {
 public:
  // Makes `spec` below `images` (a directory fsrr made): the outermost layer's image (or
  // tmpfs) there, each inner one's image on the layer around it. `size`: bytes for a layer
  // that names none, raised to what its kind needs at least. `from_image`: instead of mkfs, a
  // copy of that image (an aged one, of this spec and size; one block layer). On an error,
  // what was made of it is gone again.
  static result<std::unique_ptr<made_fs>> make(const fs_spec& spec, const std::string& images,
                                               uint64_t size, const std::string& from_image = "");
  ~made_fs();  // innermost first: unmount, remove the image, remove the mount point
  made_fs(const made_fs&) = delete;
  made_fs& operator=(const made_fs&) = delete;

  const std::string& path() const { return path_; }  // the file system under test
  // For the report's system table.
  const std::string& device() const { return device_; }
  const std::string& mkfs() const { return mkfs_; }
  const std::string& mount_options() const { return mount_; }
  const std::string& tool() const { return tool_; }
  uint64_t make_ns() const { return make_ns_; }  // mkfs and mount, all layers
  // Tears it down now (as the destructor would) and says how long that took.
  uint64_t unmake();

  // Unmounted, innermost first, its images kept until teardown: the image of the file system
  // under test, to be read by its own tools ("" for tmpfs and directories); an error if an
  // unmount failed (then detached lazily).
  result<std::string> unmount();

  // Bytes in use on it now (statfs), and its data written to disk (syncfs, timed).
  uint64_t used_bytes() const;
  uint64_t sync_ns() const;

 private:
  struct layer {
    std::string mount_point;
    std::string image;  // "" for tmpfs
    bool mounted = false;
  };
  made_fs() = default;
  result<void> make_layers(const fs_spec& spec, const std::string& images, uint64_t size,
                           const std::string& from_image);
  result<void> make_layer(const fs_layer& l, const std::string& where, uint64_t size,
                          bool measured, const std::string& from_image);
  void tear_down() noexcept;

  std::string path_, device_, mkfs_, mount_, tool_;
  std::string existing_;     // NAME=DIR
  std::vector<layer> made_;  // outermost first
  uint64_t make_ns_ = 0;
};

// A new sparse file of `size` bytes at `path` (never an existing one), for mkfs.
result<void> make_image(const std::string& path, uint64_t size);

// A copy of image `from` at `to`, which must not exist: a reflink where the file system
// holding them has them, a sparse copy otherwise.
result<void> copy_image(const std::string& from, const std::string& to);

// The mkfs command for layer `l` on `image`: mkfs's own quiet and force flags, then the
// user's options, then the image.
std::vector<std::string> mkfs_argv(const fs_layer& l, const std::string& image);

// The least size fsrr gives a file system of `kind` that names no size: 4 GiB for an image
// (sparse: only what is written takes room), so that every mkfs makes what it makes for a
// disk — below 512 MiB mke2fs picks 1 KiB blocks, and 1 KiB files then take a quarter of the
// room they take on a real disk; mkfs.xfs refuses below 300 MB. 64 MiB for tmpfs, a limit.
uint64_t min_image_bytes(const std::string& kind);

}  // namespace fsrr::lab
