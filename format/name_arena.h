// Names kept in chunks that never move, each after its 16-bit length: a table entry holds an
// offset (8 bytes or less) where a std::string would take 32 and a heap block.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace fsrr {

class name_arena {
 public:
  static constexpr size_t chunk_bytes = 1 << 20;
  static constexpr size_t max_name = 0xffff;
  // Where a copy of `name` is (its first max_name bytes); 0 for "", which takes no space.
  uint64_t add(std::string_view name) {
    if (name.empty()) return 0;
    const uint16_t len = static_cast<uint16_t>(std::min(name.size(), max_name));
    if (used_ + sizeof len + len > chunk_bytes) {
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(chunk_bytes));
      used_ = chunks_.size() == 1 ? 1 : 0;  // offset 0 of the first chunk is ""
    }
    char* p = chunks_.back().get() + used_;
    std::memcpy(p, &len, sizeof len);
    std::memcpy(p + sizeof len, name.data(), len);
    const uint64_t at = (chunks_.size() - 1) * chunk_bytes + used_;
    used_ += sizeof len + len;
    return at;
  }
  std::string_view get(uint64_t at) const {
    if (at == 0) return {};
    const char* p = chunks_[at / chunk_bytes].get() + at % chunk_bytes;
    uint16_t len;
    std::memcpy(&len, p, sizeof len);
    return {p + sizeof len, len};
  }

 private:
  std::vector<std::unique_ptr<char[]>> chunks_;
  size_t used_ = chunk_bytes;  // in the last chunk
};

}  // namespace fsrr
