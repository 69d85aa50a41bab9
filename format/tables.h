// Interning tables shared by writer and reader: the key of each entry and the hashing that
// makes "the same key, the same id" cheap.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <string>
#include <string_view>

#include "event.h"
#include "hash.h"

namespace fsrr {

struct file_key_hash {
  size_t operator()(const file_info& f) const {
    return static_cast<size_t>(mix64(mix64(f.dev, f.ino), static_cast<uint64_t>(f.gen) << 32 | f.type));
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

// An interning map that forgets, so that an hour-long recording's memory stays bounded: two
// generations of at most `limit` keys each. A key seen among the last `limit` to 2*`limit`
// new keys keeps its id; an older one gets a new id, which makes a duplicate table entry
// (the same path or file twice), never a wrong one.
template <typename K, typename V, typename H = std::hash<K>>
class bounded_intern {
 public:
  explicit bounded_intern(size_t limit) : limit_(limit) {}
  // The id of `key`; make() gives a new key its id.
  template <typename Make>
  V get(const K& key, Make&& make) {
    if (auto it = cur_.find(key); it != cur_.end()) return it->second;
    V v;
    if (auto it = old_.find(key); it != old_.end())
      v = it->second;
    else
      v = make();
    insert(key, v);
    return v;
  }

 private:
  void insert(const K& key, V v) {
    if (cur_.size() >= limit_) {
      old_ = std::move(cur_);
      cur_ = {};
    }
    cur_.emplace(key, v);
  }
  size_t limit_;
  std::unordered_map<K, V, H> cur_, old_;
};

}  // namespace fsrr
