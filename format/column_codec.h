// Event columns of one thread within one chunk: the encoder the writer fills and the decoder
// the reader runs. Both apply the same predictions (column_state), so a sequential read
// loop stores mostly zeros: its offset follows the previous transfer, its result equals the
// size it asked for, its file is the previous one.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "event.h"
#include "result.h"

namespace fsrr::codec {

enum column : uint8_t {
  c_op, c_gap, c_dur, c_result, c_fd, c_fd2, c_file, c_file2, c_path, c_path2,
  c_offset, c_offset2, c_size, c_flags, c_mode, c_aux, c_via, column_count
};

inline void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
// Prediction arithmetic wraps: a hostile column must not overflow a signed integer.
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

// Extra bits in the field masks stored in the header, telling the decoder which predictions
// apply to an op; decoding relies only on the header's bits, so a reader decodes ops it does
// not know.
// Transfers data: the result is predicted by the size, the offset by the previous transfer.
inline constexpr uint32_t F_TRANSFER = 1u << 31;
// Carries times in offset/offset2 (utimensat and friends): predicted by the previous ones.
inline constexpr uint32_t F_TIMES = 1u << 30;
// Returns a new fd for its file: later ops on that fd predict their file from it.
inline constexpr uint32_t F_NEW_FD = 1u << 29;
uint32_t wire_fields(op o);

// What the previous events of the thread predict about the next one.
struct column_state {
  uint64_t prev_end = 0;  // exit time of the previous event
  uint32_t prev_file = 0, prev_file2 = 0, prev_path = 0, prev_path2 = 0;
  uint32_t max_file = 0;  // the highest file id of the thread so far
  uint32_t xfer_file = 0;  // file of the previous read/write/copy
  int64_t xfer_end = 0;    // where that transfer ended
  int64_t prev_time = 0, prev_time2 = 0;  // the previous times set
  std::vector<uint32_t> fd_file;          // fd -> the file last seen on it in this thread

  static constexpr int32_t max_tracked_fd = 4096;

  int64_t predicted_offset(const event& e, uint32_t fields) const {
    if (fields & F_TIMES) return prev_time;
    return e.file != no_id && e.file == xfer_file ? xfer_end : 0;
  }
  int64_t predicted_offset2(uint32_t fields) const { return fields & F_TIMES ? prev_time2 : 0; }
  // An op on an fd is usually on the file that fd was opened for; an op on the path of the
  // previous op on the same file; an op on another path on a file new to the thread (ids are
  // given out in order of first sight). Needs e.fd and e.path decoded first.
  uint32_t predicted_file(const event& e, uint32_t fields) const {
    if ((fields & F_FD) && e.fd >= 0 && e.fd < static_cast<int32_t>(fd_file.size()) &&
        fd_file[e.fd] != no_id)
      return fd_file[e.fd];
    if (fields & F_PATH) return e.path == prev_path ? prev_file : max_file + 1;
    return prev_file;
  }
  void after(const event& e, uint32_t fields);

 private:
  void remember_fd(int64_t fd, uint32_t file);
};

// Data ops usually return what they asked for.
inline int64_t predicted_result(const event& e, uint32_t fields) {
  return (fields & F_TRANSFER) && (fields & F_SIZE) ? static_cast<int64_t>(e.size) : 0;
}

class group_encoder {
 public:
  // Times of the events added must be multiples of `time_unit` ns (the writer rounds them).
  explicit group_encoder(uint64_t first_ts, uint64_t time_unit = 1)
      : first_ts_(first_ts), unit_(time_unit ? time_unit : 1) {
    state_.prev_end = first_ts;
  }
  void add(const event& e);
  uint32_t count() const { return count_; }
  uint64_t first_ts() const { return first_ts_; }
  const std::vector<uint8_t>& data(column c) const { return cols_[c]; }
  size_t bytes() const;

 private:
  std::array<std::vector<uint8_t>, column_count> cols_;
  uint32_t count_ = 0;
  uint64_t first_ts_;
  uint64_t unit_;
  column_state state_;
};

// How the file's op codes map onto this build's ops.
struct op_map {
  struct entry {
    bool known = false;
    op kind = op::read;
    uint32_t fields = 0;
  };
  std::vector<entry> codes;
};

// Decodes `count` events of one thread; appends them to `out`. Fails (appending nothing) if
// a column is short, an op code is unknown to the file, or a value is out of range. Events of
// ops this build does not know are decoded (their fields skipped) and counted in `unknown`.
struct group_input {
  thread_id thread;
  uint32_t count;
  uint64_t first_ts;
  std::array<std::span<const uint8_t>, column_count> cols;
  uint64_t time_unit = 1;  // gap and dur are stored in these units of ns
};
result<void> decode_group(const group_input& in, const op_map& ops, std::vector<event>& out,
                          uint64_t& unknown);

class varint_reader {
 public:
  varint_reader() = default;
  explicit varint_reader(std::span<const uint8_t> s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool get(uint64_t& v) {
    // Most values are predicted well and take one byte, many times two: the fast paths.
    if (end_ - p_ >= 2) {
      const uint8_t b0 = p_[0];
      if (b0 < 0x80) {
        v = b0;
        p_ += 1;
        return true;
      }
      const uint8_t b1 = p_[1];
      if (b1 < 0x80) {
        v = (b0 & 0x7fu) | static_cast<uint64_t>(b1) << 7;
        p_ += 2;
        return true;
      }
    }
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t b = *p_++;
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        v = r;
        return true;
      }
    }
    return false;  // more than 10 bytes: not a varint we wrote
  }
  bool get_byte(uint8_t& b) {
    if (p_ == end_) return false;
    b = *p_++;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
};

// Decodes one thread group a batch at a time, so that a reader holds a few thousand decoded
// events per thread (in cache) rather than a whole chunk's. The columns must outlive it.
class group_decoder {
 public:
  group_decoder(const group_input& in, const op_map& ops);
  // Appends up to `max` events to `out`; fails on damage, and again on every later call.
  result<void> decode(std::vector<event>& out, size_t max, uint64_t& unknown);
  bool done() const { return next_ == in_.count; }

 private:
  tl::unexpected<error> fail(const char* what);
  group_input in_;
  const op_map* ops_;
  std::array<varint_reader, column_count> r_;
  column_state st_;
  uint32_t next_ = 0;  // events decoded so far
  bool failed_ = false;
  std::string error_;
};

}  // namespace fsrr::codec
