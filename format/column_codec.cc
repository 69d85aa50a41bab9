#include "column_codec.h"

#include <fmt/format.h>

namespace fsrr::codec {
namespace {

bool carries_data(op_class c) {
  return c == op_class::read || c == op_class::write || c == op_class::copy ||
         c == op_class::stream;
}

}  // namespace

uint32_t wire_fields(op o) {
  const op_info& i = info(o);
  uint32_t f = i.fields;
  if (carries_data(i.cls)) f |= F_TRANSFER;
  if (i.cls == op_class::attr && (f & F_OFFSET) && (f & F_OFFSET2)) f |= F_TIMES;
  if ((i.cls == op_class::open || o == op::dup || o == op::dup2 || o == op::dup3) &&
      (f & F_FILE))
    f |= F_NEW_FD;
  return f;
}

void column_state::remember_fd(int64_t fd, uint32_t file) {
  if (fd < 0 || fd >= max_tracked_fd || file == no_id) return;
  if (fd >= static_cast<int64_t>(fd_file.size())) fd_file.resize(static_cast<size_t>(fd) + 1);
  fd_file[static_cast<size_t>(fd)] = file;
}

void column_state::after(const event& e, uint32_t fields) {
  prev_end = e.ts + e.dur;
  if (fields & F_FILE) {
    if (fields & F_FD) remember_fd(e.fd, e.file);
    if (fields & F_NEW_FD) remember_fd(e.result, e.file);
  }
  if (fields & F_TIMES) {
    prev_time = e.offset;
    prev_time2 = e.offset2;
  }
  if (fields & F_FILE) {
    prev_file = e.file;
    if (e.file > max_file) max_file = e.file;
  }
  if (fields & F_FILE2) prev_file2 = e.file2;
  if (fields & F_PATH) prev_path = e.path;
  if (fields & F_PATH2) prev_path2 = e.path2;
  if ((fields & F_TRANSFER) && (fields & F_OFFSET)) {
    xfer_file = e.file;
    xfer_end = wrap_add(e.offset, e.result > 0 ? e.result : 0);
  }
}

size_t group_encoder::bytes() const {
  size_t n = 0;
  for (const auto& c : cols_) n += c.size();
  return n;
}

void group_encoder::add(const event& e) {
  const uint32_t f = wire_fields(e.kind);
  cols_[c_op].push_back(static_cast<uint8_t>(e.kind));
  put_varint(cols_[c_gap],
             zigzag(static_cast<int64_t>(e.ts - state_.prev_end) / static_cast<int64_t>(unit_)));
  put_varint(cols_[c_dur], e.dur / unit_);
  put_varint(cols_[c_result], zigzag(wrap_sub(e.result, predicted_result(e, f))));
  if (f & F_FD) put_varint(cols_[c_fd], zigzag(e.fd));
  if (f & F_FD2) put_varint(cols_[c_fd2], zigzag(e.fd2));
  if (f & F_FILE)
    put_varint(cols_[c_file], zigzag(wrap_sub(e.file, state_.predicted_file(e, f))));
  if (f & F_FILE2) put_varint(cols_[c_file2], zigzag(wrap_sub(e.file2, state_.prev_file2)));
  if (f & F_PATH) put_varint(cols_[c_path], zigzag(wrap_sub(e.path, state_.prev_path)));
  if (f & F_PATH2) put_varint(cols_[c_path2], zigzag(wrap_sub(e.path2, state_.prev_path2)));
  if (f & F_OFFSET)
    put_varint(cols_[c_offset], zigzag(wrap_sub(e.offset, state_.predicted_offset(e, f))));
  if (f & F_OFFSET2)
    put_varint(cols_[c_offset2], zigzag(wrap_sub(e.offset2, state_.predicted_offset2(f))));
  if (f & F_SIZE) put_varint(cols_[c_size], e.size);
  if (f & F_FLAGS) put_varint(cols_[c_flags], e.flags);
  if (f & F_MODE) put_varint(cols_[c_mode], e.mode);
  if (f & F_AUX) put_varint(cols_[c_aux], e.aux);
  if (f & F_VIA) put_varint(cols_[c_via], e.via);
  state_.after(e, f);
  ++count_;
}

group_decoder::group_decoder(const group_input& in, const op_map& ops)
    : in_(in), ops_(&ops) {
  for (int c = 0; c < column_count; ++c) r_[c] = varint_reader(in.cols[c]);
  st_.prev_end = in.first_ts;
}

tl::unexpected<error> group_decoder::fail(const char* what) {
  error_ = fmt::format("thread {} event {}: {}", in_.thread, next_, what);
  failed_ = true;
  return failure(error_);
}

result<void> group_decoder::decode(std::vector<event>& out, size_t max, uint64_t& unknown) {
  if (failed_) return failure(error_);
  const size_t base = out.size();
  const size_t want = std::min<size_t>(max, in_.count - next_);
  out.resize(base + want);  // decoded in place; ops this build does not know are dropped
  size_t n = base;
  bool reused = false;  // slot n holds a dropped event's fields
  // Readers and predictions in locals for the loop: members would be reloaded after every
  // store to an event.
  std::array<varint_reader, column_count> r = r_;
  column_state st = std::move(st_);
  const uint64_t unit = in_.time_unit ? in_.time_unit : 1;
  struct put_back {
    group_decoder& d;
    std::array<varint_reader, column_count>& r;
    column_state& st;
    ~put_back() {
      d.r_ = r;
      d.st_ = std::move(st);
    }
  } keep{*this, r, st};
  for (size_t k = 0; k < want; ++k, ++next_) {
    uint8_t code;
    if (!r[c_op].get_byte(code)) return fail("op column too short");
    if (code >= ops_->codes.size()) return fail("op code outside the header's op list");
    const op_map::entry& m = ops_->codes[code];
    event& e = out[n];
    if (reused) e = event{};
    e.thread = in_.thread;
    e.kind = m.kind;
    uint64_t gap, dur, res, v;
    if (!r[c_gap].get(gap) || !r[c_dur].get(dur) || !r[c_result].get(res))
      return fail("time or result column too short");
    e.ts = st.prev_end + static_cast<uint64_t>(unzigzag(gap)) * unit;
    e.dur = dur * unit;
    const uint32_t f = m.fields;
#define FIELD(bit, col, assign)                                  \
  if (f & bit) {                                                 \
    if (!r[col].get(v)) return fail("field column too short");  \
    assign;                                                      \
  }
    FIELD(F_FD, c_fd, e.fd = static_cast<int32_t>(unzigzag(v)))
    FIELD(F_FD2, c_fd2, e.fd2 = static_cast<int32_t>(unzigzag(v)))
    // Paths before files: a file is predicted from its fd or its path.
    FIELD(F_PATH, c_path, e.path = static_cast<uint32_t>(wrap_add(st.prev_path, unzigzag(v))))
    FIELD(F_PATH2, c_path2,
          e.path2 = static_cast<uint32_t>(wrap_add(st.prev_path2, unzigzag(v))))
    FIELD(F_FILE, c_file,
          e.file = static_cast<uint32_t>(wrap_add(st.predicted_file(e, f), unzigzag(v))))
    FIELD(F_FILE2, c_file2,
          e.file2 = static_cast<uint32_t>(wrap_add(st.prev_file2, unzigzag(v))))
    FIELD(F_OFFSET, c_offset, e.offset = wrap_add(unzigzag(v), st.predicted_offset(e, f)))
    FIELD(F_OFFSET2, c_offset2, e.offset2 = wrap_add(unzigzag(v), st.predicted_offset2(f)))
    FIELD(F_SIZE, c_size, e.size = v)
    FIELD(F_FLAGS, c_flags, e.flags = static_cast<uint32_t>(v))
    FIELD(F_MODE, c_mode, e.mode = static_cast<uint32_t>(v))
    FIELD(F_AUX, c_aux, e.aux = v)
    FIELD(F_VIA, c_via, e.via = static_cast<uint32_t>(v))
#undef FIELD
    e.result = wrap_add(unzigzag(res), predicted_result(e, f));
    st.after(e, f);
    reused = !m.known;
    if (m.known)
      ++n;
    else
      ++unknown;  // decoded to keep the predictions in step, then dropped
  }
  out.resize(n);
  if (done())
    for (int c = 0; c < column_count; ++c)
      if (!r[c].done()) return fail("column longer than its events");
  return {};
}

result<void> decode_group(const group_input& in, const op_map& ops, std::vector<event>& out,
                          uint64_t& unknown) {
  group_decoder d(in, ops);
  const size_t base = out.size();
  auto r = d.decode(out, in.count, unknown);
  if (!r) out.resize(base);
  return r;
}

}  // namespace fsrr::codec
