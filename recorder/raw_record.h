// Views of the records the BPF programs send (bpf/fsrr.h): a fixed header, then items.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "fsrr.h"

namespace fsrr::recorder {

struct walk_view {
  std::span<const uint8_t> bytes;  // components leaf first: a length byte, then the name
  uint32_t flags = 0;              // enum fsrr_walk_flags
  bool present = false;
};

// The items of one record. Slots: 0 fd/path, 1 fd2/path2, 2 result fd / extra string.
struct record_items {
  const fsrr_file* file[3] = {};
  const fsrr_fdref* ref[3] = {};
  const fsrr_attr* attr[3] = {};
  std::optional<std::string_view> str[3];
  walk_view walk[3];
  std::span<const uint8_t> user;
  std::optional<uint64_t> u64[4];  // 0: iovec total, 1: ACL mode bits, 2-3: *loff at exit
  std::span<const uint8_t> aio[2];  // 0: fsrr_aio_iocb each (io_submit), 1: io_events
};

// Parses the items after a header of `header_len` bytes. False if the record is malformed
// (the reader of a ring buffer must not trust lengths blindly either).
bool parse_items(std::span<const uint8_t> record, size_t header_len, record_items& out);

// The header of a record, if it is at least that long.
template <class T>
const T* header_as(std::span<const uint8_t> record) {
  return record.size() >= sizeof(T) ? reinterpret_cast<const T*>(record.data()) : nullptr;
}

}  // namespace fsrr::recorder
