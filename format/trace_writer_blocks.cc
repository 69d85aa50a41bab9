// How a trace writer's blocks, header and footer are laid out in FlatBuffers (trace.fbs): a
// block's new table entries (defs), its chunk of events by thread, its tree and counters.
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "container.h"
#include "trace_writer_state.h"
#include "tree_columns.h"

namespace fsrr {
namespace {

// The non-file op counts as the three columns a block's counters and the footer hold.
struct nonfile_columns {
  flatbuffers::Offset<flatbuffers::Vector<uint16_t>> op;
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> kind;
  flatbuffers::Offset<flatbuffers::Vector<uint64_t>> count;

  nonfile_columns(flatbuffers::FlatBufferBuilder& fbb,
                  const std::map<std::pair<fsrr::op, fd_kind>, uint64_t>& counts) {
    std::vector<uint16_t> o;
    std::vector<uint8_t> k;
    std::vector<uint64_t> n;
    for (const auto& [key, c] : counts) {
      o.push_back(static_cast<uint16_t>(key.first));
      k.push_back(static_cast<uint8_t>(key.second));
      n.push_back(c);
    }
    op = fbb.CreateVector(o);
    kind = fbb.CreateVector(k);
    count = fbb.CreateVector(n);
  }
};

// 128 random bits as 32 hex digits: a trace's id (header_info::trace_id).
result<std::string> new_trace_id() {
  uint8_t bits[16];
  size_t got = 0;
  while (got < sizeof bits) {
    const ssize_t n = ::getrandom(bits + got, sizeof bits - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (errno != EINTR)
      return failure("cannot make a trace id: getrandom: {}", std::strerror(errno));
  }
  std::string id;
  for (const uint8_t b : bits) id += fmt::format("{:02x}", b);
  return id;
}

}  // namespace

void trace_writer_state::write_header(const header_info& h) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<flatbuffers::String>> command, names;
  for (const auto& c : h.command) command.push_back(fbb.CreateString(c));
  std::vector<uint32_t> fields;
  for (size_t i = 0; i < op_count; ++i) {
    names.push_back(fbb.CreateString(op_table[i].name));
    fields.push_back(codec::wire_fields(static_cast<op>(i)));
  }
  const auto writer = fbb.CreateString(h.writer);
  const auto host = fbb.CreateString(h.hostname);
  const auto kernel = fbb.CreateString(h.kernel);
  const auto cmd = fbb.CreateVector(command);
  const auto op_names = fbb.CreateVector(names);
  const auto op_fields = fbb.CreateVector(fields);
  const auto derived = h.derived.empty() ? 0 : fbb.CreateString(h.derived);
  const auto key_id = h.key_id.empty() ? 0 : fbb.CreateString(h.key_id);
  const auto id = h.trace_id.empty() ? new_trace_id() : result<std::string>(h.trace_id);
  if (!id) {
    status = tl::unexpected(id.error());
    return;
  }
  const auto trace_id = fbb.CreateString(*id);
  std::vector<flatbuffers::Offset<fb::Host>> host_list;
  for (const host_info& x : h.hosts) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> host_cmd;
    for (const auto& c : x.command) host_cmd.push_back(fbb.CreateString(c));
    const auto hn = fbb.CreateString(x.name), hk = fbb.CreateString(x.kernel),
               hi = fbb.CreateString(x.trace_id);
    const auto hc = fbb.CreateVector(host_cmd);
    fb::HostBuilder hb(fbb);
    hb.add_name(hn);
    hb.add_kernel(hk);
    hb.add_trace_id(hi);
    hb.add_command(hc);
    hb.add_clock_monotonic_ns(x.clock_monotonic_ns);
    hb.add_clock_realtime_ns(x.clock_realtime_ns);
    hb.add_offset_ns(x.offset_ns);
    hb.add_cpus(x.cpus);
    host_list.push_back(hb.Finish());
  }
  const auto hosts = h.hosts.empty() ? 0 : fbb.CreateVector(host_list);
  fb::HeaderBuilder b(fbb);
  b.add_format_major(time_unit > 1       ? format_major_units
                     : h.hosts.empty() ? format_major
                                       : format_major_hosts);
  b.add_format_minor(format_minor);
  b.add_time_unit_ns(time_unit);
  b.add_writer(writer);
  b.add_kind(static_cast<fb::TraceKind>(h.kind));
  b.add_clock_monotonic_ns(h.clock_monotonic_ns);
  b.add_clock_realtime_ns(h.clock_realtime_ns);
  b.add_hostname(host);
  b.add_kernel(kernel);
  b.add_command(cmd);
  b.add_page_size(h.page_size);
  b.add_cpus(h.cpus);
  b.add_op_names(op_names);
  b.add_op_fields(op_fields);
  if (!h.derived.empty()) b.add_derived(derived);
  if (!h.key_id.empty()) b.add_key_id(key_id);
  b.add_trace_id(trace_id);
  if (!h.hosts.empty()) b.add_hosts(hosts);
  fbb.Finish(b.Finish(), "FSRH");
  write_frame(
      container::skippable_frame(container::header_magic, {fbb.GetBufferPointer(), fbb.GetSize()}));
}

// The block's parts, each built into `fbb` when the block has one.
flatbuffers::Offset<fb::Defs> trace_writer_state::build_defs(
    flatbuffers::FlatBufferBuilder& fbb) {
  const auto pp = fbb.CreateVector(defs.path_parent);
  const auto pl = fbb.CreateVector(defs.path_name_len);
  const auto pn = fbb.CreateVector(defs.path_names);
  const auto sl = fbb.CreateVector(defs.string_len);
  const auto sb = fbb.CreateVector(defs.string_bytes);
  const auto fd_ = fbb.CreateVector(defs.file_dev);
  const auto fi = fbb.CreateVector(defs.file_ino);
  const auto fg = fbb.CreateVector(defs.file_gen);
  const auto ft = fbb.CreateVector(defs.file_type);
  const auto tt = fbb.CreateVector(defs.thread_tid);
  const auto tp = fbb.CreateVector(defs.thread_pid);
  const auto tpp = fbb.CreateVector(defs.thread_ppid);
  const auto tc = fbb.CreateVector(defs.thread_comm);
  const auto tf = fbb.CreateVector(defs.thread_fd_table);
  const auto th = fbb.CreateVector(defs.thread_host_tid);
  const auto thp = fbb.CreateVector(defs.thread_host_pid);
  const auto tr = fbb.CreateVector(defs.thread_root);
  const auto rt = fbb.CreateVector(defs.root_top);
  const auto rm = fbb.CreateVector(defs.root_mnt_ns);
  const auto rd = fbb.CreateVector(defs.root_dev);
  const auto ri = fbb.CreateVector(defs.root_ino);
  const auto rw = fbb.CreateVector(defs.root_where);
  const auto thh = defs.thread_hosts ? fbb.CreateVector(defs.thread_host) : 0;
  const auto fh = defs.file_hosts ? fbb.CreateVector(defs.file_host) : 0;
  fb::DefsBuilder b(fbb);
  b.add_path_first(defs.path_first);
  b.add_path_parent(pp);
  b.add_path_name_len(pl);
  b.add_path_names(pn);
  b.add_string_first(defs.string_first);
  b.add_string_len(sl);
  b.add_string_bytes(sb);
  b.add_file_first(defs.file_first);
  b.add_file_dev(fd_);
  b.add_file_ino(fi);
  b.add_file_gen(fg);
  b.add_file_type(ft);
  b.add_thread_first(defs.thread_first);
  b.add_thread_tid(tt);
  b.add_thread_pid(tp);
  b.add_thread_ppid(tpp);
  b.add_thread_comm(tc);
  b.add_thread_fd_table(tf);
  b.add_thread_host_tid(th);
  b.add_thread_host_pid(thp);
  b.add_thread_root(tr);
  b.add_root_first(defs.root_first);
  b.add_root_top(rt);
  b.add_root_mnt_ns(rm);
  b.add_root_dev(rd);
  b.add_root_ino(ri);
  b.add_root_where(rw);
  if (defs.thread_hosts) b.add_thread_host(thh);
  if (defs.file_hosts) b.add_file_host(fh);
  return b.Finish();
}

flatbuffers::Offset<fb::Chunk> trace_writer_state::build_chunk(
    flatbuffers::FlatBufferBuilder& fbb) {
  std::vector<flatbuffers::Offset<fb::ThreadEvents>> te;
  std::vector<std::pair<thread_id, size_t>> order(group_of.begin(), group_of.end());
  std::sort(order.begin(), order.end());
  for (const auto& [tid, gi] : order) {
    const auto& g = groups[gi];
    std::array<flatbuffers::Offset<flatbuffers::Vector<uint8_t>>, codec::column_count> c;
    for (int i = 0; i < codec::column_count; ++i)
      c[i] = fbb.CreateVector(g.data(static_cast<codec::column>(i)));
    fb::ThreadEventsBuilder b(fbb);
    b.add_thread(tid);
    b.add_count(g.count());
    b.add_first_ts(g.first_ts());
    b.add_op(c[codec::c_op]);
    b.add_gap(c[codec::c_gap]);
    b.add_dur(c[codec::c_dur]);
    b.add_result(c[codec::c_result]);
    b.add_fd(c[codec::c_fd]);
    b.add_fd2(c[codec::c_fd2]);
    b.add_file(c[codec::c_file]);
    b.add_file2(c[codec::c_file2]);
    b.add_path(c[codec::c_path]);
    b.add_path2(c[codec::c_path2]);
    b.add_offset(c[codec::c_offset]);
    b.add_offset2(c[codec::c_offset2]);
    b.add_size(c[codec::c_size]);
    b.add_flags(c[codec::c_flags]);
    b.add_mode(c[codec::c_mode]);
    b.add_aux(c[codec::c_aux]);
    b.add_via(c[codec::c_via]);
    te.push_back(b.Finish());
  }
  const auto tv = fbb.CreateVector(te);
  fb::ChunkBuilder b(fbb);
  b.add_events(chunk_events);
  b.add_min_ts(chunk_min_ts);
  b.add_max_ts(chunk_max_ts);
  b.add_threads(tv);
  return b.Finish();
}

flatbuffers::Offset<fb::Counters> trace_writer_state::build_counters(
    flatbuffers::FlatBufferBuilder& fbb) {
  std::vector<uint32_t> lc;
  std::vector<uint64_t> ln;
  for (const auto& [cpu, n] : lost) {
    lc.push_back(cpu);
    ln.push_back(n);
  }
  const auto v_lc = fbb.CreateVector(lc);
  const auto v_ln = fbb.CreateVector(ln);
  const nonfile_columns v_nonfile(fbb, nonfile);
  const auto v_cl = fbb.CreateVectorOfStructs(clocks);
  fb::CountersBuilder b(fbb);
  b.add_lost_cpu(v_lc);
  b.add_lost_count(v_ln);
  b.add_nonfile_op(v_nonfile.op);
  b.add_nonfile_kind(v_nonfile.kind);
  b.add_nonfile_count(v_nonfile.count);
  b.add_incomplete(incomplete);
  b.add_clocks(v_cl);
  b.add_pauses(pauses);
  b.add_paused_ns(paused_ns);
  b.add_filtered(filtered);
  return b.Finish();
}

void trace_writer_state::write_block() {
  flatbuffers::FlatBufferBuilder fbb(chunk_bytes + defs.bytes() + tree.size() * 64 + 4096);

  flatbuffers::Offset<fb::Defs> defs_off;
  if (!defs.empty()) defs_off = build_defs(fbb);
  flatbuffers::Offset<fb::Chunk> chunk_off;
  if (chunk_events) chunk_off = build_chunk(fbb);
  flatbuffers::Offset<fb::Tree> tree_off;
  if (!tree.empty()) tree_off = write_tree(fbb, tree);
  flatbuffers::Offset<fb::Counters> counters_off;
  if (!lost.empty() || !nonfile.empty() || incomplete || !clocks.empty() || pauses || paused_ns ||
      filtered)
    counters_off = build_counters(fbb);

  fb::BlockBuilder b(fbb);
  b.add_seq(seq);
  if (!defs_off.IsNull()) b.add_defs(defs_off);
  if (!chunk_off.IsNull()) b.add_chunk(chunk_off);
  if (!tree_off.IsNull()) b.add_tree(tree_off);
  if (!counters_off.IsNull()) b.add_counters(counters_off);
  fbb.Finish(b.Finish(), "FSRB");

  const auto compressed =
      container::compress_frame({fbb.GetBufferPointer(), fbb.GetSize()}, opt.zstd_level);
  if (!compressed && status) status = tl::unexpected(compressed.error());
  static const std::vector<uint8_t> nothing;
  const auto& frame = compressed ? *compressed : nothing;
  const uint64_t at_offset = file_offset;
  write_frame(frame);
  blocks.emplace_back(at_offset, frame.size(), chunk_events, static_cast<uint32_t>(tree.size()),
                      chunk_events ? chunk_min_ts : 0, chunk_events ? chunk_max_ts : 0);
  ++seq;

  defs = pending_defs{};
  last_dev = last_ino = 0;
  last_parent = 0;
  groups.clear();
  group_of.clear();
  if (chunk_events) chunk_limit = std::min(opt.chunk_events, chunk_limit * 2);
  chunk_events = 0;
  chunk_bytes = 0;
  tree.clear();
  lost.clear();
  nonfile.clear();
  incomplete = 0;
  pauses = paused_ns = filtered = 0;
  clocks.clear();
}

void trace_writer_state::write_footer() {
  flatbuffers::FlatBufferBuilder fbb(4096 + blocks.size() * sizeof(fb::BlockRef));
  std::vector<uint64_t> counts(sum.op_counts.begin(), sum.op_counts.end());
  const auto v_blocks = fbb.CreateVectorOfStructs(blocks);
  const auto v_counts = fbb.CreateVector(counts);
  const nonfile_columns v_nonfile(fbb, sum.nonfile);
  fb::FooterBuilder b(fbb);
  b.add_blocks(v_blocks);
  b.add_events(sum.events);
  b.add_lost_events(sum.lost_events);
  b.add_first_ts(sum.first_ts);
  b.add_last_ts(sum.last_ts);
  b.add_op_counts(v_counts);
  b.add_paths(paths);
  b.add_strings(strings);
  b.add_files(files);
  b.add_threads(threads);
  b.add_processes(static_cast<uint32_t>(pids.size()));
  b.add_bytes_read(sum.bytes_read);
  b.add_bytes_written(sum.bytes_written);
  b.add_incomplete(sum.incomplete);
  b.add_tree_files(sum.tree.files);
  b.add_tree_dirs(sum.tree.dirs);
  b.add_tree_symlinks(sum.tree.symlinks);
  b.add_tree_other(sum.tree.other);
  b.add_tree_bytes(sum.tree.bytes);
  b.add_nonfile_op(v_nonfile.op);
  b.add_nonfile_kind(v_nonfile.kind);
  b.add_nonfile_count(v_nonfile.count);
  fbb.Finish(b.Finish(), "FSRF");
  write_frame(container::skippable_frame(container::footer_magic,
                                         {fbb.GetBufferPointer(), fbb.GetSize()}, true));
}

}  // namespace fsrr
