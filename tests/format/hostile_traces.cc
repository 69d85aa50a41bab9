#include "hostile_traces.h"

#include <fstream>

#include <flatbuffers/flatbuffers.h>

#include "trace_framing.h"
#include "trace_generated.h"
#include "trace_reader.h"

namespace fsrr::test {

void spit(const std::string& p, const std::vector<uint8_t>& data) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

std::vector<uint8_t> bare_header(uint32_t time_unit_ns) {
  flatbuffers::FlatBufferBuilder fbb;
  const auto names = fbb.CreateVectorOfStrings({"read"});
  const auto fields = fbb.CreateVector(std::vector<uint32_t>{0});
  fb::HeaderBuilder h(fbb);
  h.add_format_major(format_major);
  h.add_time_unit_ns(time_unit_ns);
  h.add_op_names(names);
  h.add_op_fields(fields);
  fbb.Finish(h.Finish(), "FSRH");
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

std::vector<uint8_t> events_block(uint32_t count, size_t column_bytes, size_t blob,
                                  uint64_t min_ts, uint8_t gap_byte, uint8_t dur_byte) {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<uint8_t> zeros(column_bytes, 0);
  const auto parent = fbb.CreateVector(std::vector<uint32_t>{0});
  const auto name_len = fbb.CreateVector(std::vector<uint32_t>{0});
  const auto names = fbb.CreateVector(std::vector<uint8_t>(blob, 'x'));
  const auto string_len = fbb.CreateVector(std::vector<uint32_t>{2});
  const auto string_bytes = fbb.CreateVector(std::vector<uint8_t>{'s', 'h'});
  const auto one = fbb.CreateVector(std::vector<int32_t>{1});
  const auto comm = fbb.CreateVector(std::vector<uint32_t>{1});
  fb::DefsBuilder d(fbb);
  d.add_path_first(1);
  d.add_path_parent(parent);
  d.add_path_name_len(name_len);
  if (blob) d.add_path_names(names);
  d.add_string_first(1);
  d.add_string_len(string_len);
  d.add_string_bytes(string_bytes);
  d.add_thread_first(1);
  d.add_thread_tid(one);
  d.add_thread_pid(one);
  d.add_thread_ppid(one);
  d.add_thread_comm(comm);
  d.add_thread_fd_table(comm);
  const auto defs = d.Finish();
  const auto col = [&] { return fbb.CreateVector(zeros); };
  const auto op = col(), result = col();
  const auto gap = fbb.CreateVector(std::vector<uint8_t>(column_bytes, gap_byte));
  const auto dur = fbb.CreateVector(std::vector<uint8_t>(column_bytes, dur_byte));
  fb::ThreadEventsBuilder t(fbb);
  t.add_thread(1);
  t.add_count(count);
  t.add_op(op);
  t.add_gap(gap);
  t.add_dur(dur);
  t.add_result(result);
  const auto group = t.Finish();
  const auto groups = fbb.CreateVector(std::vector{group});
  fb::ChunkBuilder c(fbb);
  c.add_events(count);
  c.add_min_ts(min_ts);
  c.add_threads(groups);
  const auto chunk = c.Finish();
  fb::BlockBuilder b(fbb);
  b.add_seq(0);
  b.add_defs(defs);
  b.add_chunk(chunk);
  fbb.Finish(b.Finish(), "FSRB");
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

std::vector<uint8_t> misaligned_footer() {
  for (int pad = 0; pad < 2; ++pad) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.StartVector(sizeof(fb::BlockRef) / 4, 4);  // aligned to 4 only
    const fb::BlockRef ref(37, 100, 1, 0, 0, 0);
    fbb.PushBytes(reinterpret_cast<const uint8_t*>(&ref), sizeof ref);
    const flatbuffers::Offset<flatbuffers::Vector<const fb::BlockRef*>> refs(fbb.EndVector(1));
    if (pad) fbb.CreateVector(std::vector<uint32_t>{7});
    fb::FooterBuilder f(fbb);
    f.add_blocks(refs);
    fbb.Finish(f.Finish(), "FSRF");
    std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    const auto* v = flatbuffers::GetRoot<fb::Footer>(out.data())->blocks();
    if ((reinterpret_cast<const uint8_t*>(v->Data()) - out.data()) % 8 == 4) return out;
  }
  return {};
}

void write_payloads(const std::string& path, const std::vector<std::vector<uint8_t>>& records,
                    uint8_t flags) {
  std::vector<uint8_t> input{flags};
  for (const auto& r : records) fuzz::put_record(input, r);
  spit(path, fuzz::frame_trace(input));
}

}  // namespace fsrr::test
