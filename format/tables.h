// Interning tables shared by writer and reader: the key of each entry and the hashing that
// makes "the same key, the same id" cheap.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "event.h"
#include "hash.h"

namespace fsrr {

struct file_key_hash {
  size_t operator()(const file_info& f) const {
    return static_cast<size_t>(mix64(mix64(f.dev, f.ino) ^ f.host,
                                     static_cast<uint64_t>(f.gen) << 32 | f.type));
  }
};

// A name a path table may hold: not empty, no '/', no NUL, at most 65,535 bytes (a reader
// keeps a name's length in 16 bits; NAME_MAX is 255).
inline bool valid_component(std::string_view name) {
  return !name.empty() && name.size() <= 0xffff && name.find('/') == std::string_view::npos &&
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

// The same two generations for the writer's large tables, over open addressing (linear probing
// in a power-of-two array of slots; id 0 marks a free slot): a key costs its slot and, for a
// path, its name's bytes, where std::unordered_map spends a node and a std::string (rsync of
// 300k files: 64 of the recorder's 154 MiB heap went to the two maps). A generation doubles
// up to `max_slots` and, once that is 3/4 full, becomes the old one. `Keys` says what a slot
// holds (see path_keys, file_keys); its `store` keeps what does not fit in one.
template <typename Keys>
class flat_intern {
 public:
  using key = typename Keys::key;
  using slot = typename Keys::slot;
  // A power of two: the probe masks with slots - 1.
  explicit flat_intern(size_t max_slots)
      : max_slots_(std::bit_ceil(std::max<size_t>(max_slots, 16))) {}
  template <typename Make>
  uint32_t get(const key& k, Make&& make) {
    const uint64_t h = Keys::hash(k);
    if (const uint32_t id = cur_.find(k, h)) return id;
    uint32_t id = old_.find(k, h);
    if (!id) id = make();
    insert(k, h, id);
    return id;
  }

 private:
  struct table {
    std::vector<slot> slots;
    typename Keys::store store;
    size_t count = 0;
    uint32_t find(const key& k, uint64_t h) const {
      if (slots.empty()) return 0;
      for (size_t i = h & (slots.size() - 1);; i = (i + 1) & (slots.size() - 1)) {
        const slot& s = slots[i];
        if (!s.id) return 0;
        if (Keys::equal(s, k, store)) return s.id;
      }
    }
    void place(const slot& s, uint64_t h) {
      size_t i = h & (slots.size() - 1);
      while (slots[i].id) i = (i + 1) & (slots.size() - 1);
      slots[i] = s;
    }
    void grow(size_t n) {
      std::vector<slot> was(n);
      was.swap(slots);
      for (const slot& s : was)
        if (s.id) place(s, Keys::hash(s, store));
    }
  };
  void insert(const key& k, uint64_t h, uint32_t id) {
    if (cur_.slots.empty()) cur_.grow(std::min<size_t>(1024, max_slots_));
    if ((cur_.count + 1) * 4 > cur_.slots.size() * 3 || !Keys::fits(k, cur_.store)) {
      if (cur_.slots.size() < max_slots_ && Keys::fits(k, cur_.store)) {
        cur_.grow(cur_.slots.size() * 2);
      } else {
        old_ = std::move(cur_);
        cur_ = {};
        cur_.grow(std::min<size_t>(1024, max_slots_));
      }
    }
    cur_.place(Keys::make(k, id, cur_.store), h);
    ++cur_.count;
  }
  size_t max_slots_;
  table cur_, old_;
};

// A path entry's key: the parent id and the name, which lives in the table's name arena.
struct path_keys {
  struct key {
    uint32_t parent;
    std::string_view name;
  };
  struct slot {
    uint32_t parent = 0, id = 0, offset = 0, length = 0;
  };
  using store = std::string;
  static uint64_t hash(const key& k) {
    return mix64(k.parent, std::hash<std::string_view>()(k.name));
  }
  static uint64_t hash(const slot& s, const store& names) {
    return hash(key{s.parent, std::string_view(names).substr(s.offset, s.length)});
  }
  static bool equal(const slot& s, const key& k, const store& names) {
    return s.parent == k.parent && s.length == k.name.size() &&
           std::string_view(names).substr(s.offset, s.length) == k.name;
  }
  // Offsets are 32 bits: a generation's arena ends before 4 GiB.
  static bool fits(const key& k, const store& names) {
    return names.size() + k.name.size() <= UINT32_MAX;
  }
  static slot make(const key& k, uint32_t id, store& names) {
    const slot s{k.parent, id, static_cast<uint32_t>(names.size()),
                 static_cast<uint32_t>(k.name.size())};
    names.append(k.name);
    return s;
  }
};

// A file's key, whole in its slot.
struct file_keys {
  using key = file_info;
  struct slot {
    file_info file;
    uint32_t id = 0;
  };
  struct store {};
  static uint64_t hash(const key& f) { return file_key_hash()(f); }
  static uint64_t hash(const slot& s, const store&) { return hash(s.file); }
  static bool equal(const slot& s, const key& f, const store&) { return s.file == f; }
  static bool fits(const key&, const store&) { return true; }
  static slot make(const key& f, uint32_t id, store&) { return {f, id}; }
};

}  // namespace fsrr
