// Aged images, made once and kept: `fsrr age` makes one where the user says; compare keeps
// them in a cache keyed by everything that decides what aging leaves (the file system, its
// options and size, the profile, the tools' and the kernel's versions), and starts each run
// from a copy, so N runs on M file systems age each file system once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "aging.h"
#include "fs_spec.h"
#include "result.h"

namespace fsrr::lab {

struct aged_image {
  std::string path;       // the image file
  age_profile profile;
  age_result aged;
  layout_stats layout;    // of the files aging left
  free_space free;        // after aging, read from the unmounted image
  bool cached = false;    // found in the cache, not made now
  uint64_t make_ns = 0;   // mkfs, aging and measuring now; 0 when cached

  // As `fsrr age --json` writes it and compare.json's rows hold it.
  nlohmann::json json() const;
};

// Makes `image` (which must not exist): a file system of layer `l`, `size` bytes, aged by
// `profile`, then measured. On an error or when cancelled, the image is gone again.
result<aged_image> make_aged_image(const fs_layer& l, uint64_t size, const age_profile& profile,
                                   const std::string& image, const std::atomic<bool>* cancel,
                                   const std::function<void(const std::string&)>& progress);

// What decides an aged image, as one line: the same line, the same files.
std::string aged_image_key(const fs_layer& l, uint64_t size, const age_profile& profile);

// The aged image of (l, size, profile) in `cache_dir` (made if missing), if one was made there
// with the same key; else made there now (under a temporary name, renamed when whole).
result<aged_image> cached_aged_image(const fs_layer& l, uint64_t size, const age_profile& profile,
                                     const std::string& cache_dir, const std::atomic<bool>* cancel,
                                     const std::function<void(const std::string&)>& progress);

}  // namespace fsrr::lab
