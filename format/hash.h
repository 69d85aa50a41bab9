// The one hash fsrr uses for its tables and its generated data: splitmix64's finalizer, and
// the hash functors built on it. (Anonymized names use keyed BLAKE2b, transform/anonymize.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>

namespace fsrr {

// The splitmix64 finalizer: a bijection on 64 bits in which every input bit flips about half of
// the output bits.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Hash of a pair; a bijection in each argument when the other is fixed, so distinct blocks of
// one file never share a hash. Generated file contents depend on it: never change it.
constexpr uint64_t mix64(uint64_t a, uint64_t b) {
  return mix64(mix64(a + 0x9e3779b97f4a7c15ull) ^ b);
}

// For unordered containers keyed by a pair of integers (dev and inode, parent and name hash).
struct pair_hash {
  template <typename A, typename B>
  size_t operator()(const std::pair<A, B>& p) const {
    return static_cast<size_t>(mix64(static_cast<uint64_t>(p.first), static_cast<uint64_t>(p.second)));
  }
};

// For unordered containers keyed by std::string and looked up by std::string_view without
// building a key (with std::equal_to<>).
struct string_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

}  // namespace fsrr
