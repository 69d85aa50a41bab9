// Interning tables shared by writer and reader: the key of each entry and the hashing that
// makes "the same key, the same id" cheap.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "event.h"

namespace fsrr {

struct file_key_hash {
  size_t operator()(const file_info& f) const {
    uint64_t h = f.dev * 0x9E3779B97F4A7C15ull ^ f.ino;
    h ^= (static_cast<uint64_t>(f.gen) << 32 | f.type) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// Key of a path entry: the parent id followed by the name bytes.
inline std::string path_key(path_id parent, std::string_view name) {
  std::string k(sizeof parent, '\0');
  for (size_t i = 0; i < sizeof parent; ++i) k[i] = static_cast<char>(parent >> (8 * i));
  k.append(name);
  return k;
}

// A name a path table may hold: not empty, no '/', no NUL.
inline bool valid_component(std::string_view name) {
  return !name.empty() && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

}  // namespace fsrr
