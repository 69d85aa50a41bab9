#include "trace_writer.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "column_codec.h"
#include "container.h"
#include "tables.h"
#include "trace_generated.h"
#include "trace_reader.h"
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

result<void> write_all(int fd, const std::string& path, std::span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure("{}: write: {}", path, std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

// Bytes of pending, not yet written, table entries and tree data.
struct pending_defs {
  path_id path_first = 0;
  std::vector<uint32_t> path_parent, path_name_len;
  std::vector<uint8_t> path_names;
  string_id string_first = 0;
  std::vector<uint32_t> string_len;
  std::vector<uint8_t> string_bytes;
  file_id file_first = 0;
  std::vector<uint64_t> file_dev, file_ino;
  std::vector<uint32_t> file_gen, file_type;
  std::vector<uint16_t> file_host;  // written only when one is not 0 (a merged trace)
  bool file_hosts = false;
  thread_id thread_first = 0;
  std::vector<int32_t> thread_tid, thread_pid, thread_ppid, thread_host_tid, thread_host_pid;
  std::vector<uint32_t> thread_comm, thread_fd_table, thread_root;
  std::vector<uint16_t> thread_host;
  bool thread_hosts = false;
  uint32_t root_first = 0;
  std::vector<uint32_t> root_top, root_where;
  std::vector<uint64_t> root_mnt_ns, root_dev, root_ino;

  bool empty() const {
    return path_parent.empty() && string_len.empty() && file_dev.empty() && thread_tid.empty() &&
           root_top.empty();
  }
  size_t bytes() const {
    return path_names.size() + path_parent.size() * 8 + string_bytes.size() +
           string_len.size() * 4 + file_dev.size() * 24 + thread_tid.size() * 20;
  }
};

}  // namespace

struct trace_writer::impl {
  std::string path;
  int fd = -1;
  writer_options opt;
  bool finished = false;
  // The first failure (a write refused, say ENOSPC): nothing is written after it, so the
  // file stays a readable prefix; finish() returns it.
  result<void> status;
  uint64_t file_offset = 0;
  uint32_t seq = 0;

  // tables (ids are dense from 1)
  // Bounded: see flat_intern and bounded_intern. Paths and files churned through by a long
  // workload (rsync's temporary names, a build's objects) must not grow the recorder without
  // end.
  flat_intern<path_keys> path_ids{1u << 17};
  uint32_t paths = 0;
  bounded_intern<std::string, string_id> string_ids{1u << 16};
  uint32_t strings = 0;
  flat_intern<file_keys> file_ids{1u << 17};
  uint32_t files = 0;
  uint32_t threads = 0;
  uint32_t roots = 0;
  std::vector<path_id> root_tops;  // of roots 2, 3, ...
  std::set<std::pair<uint16_t, int32_t>> pids;  // (host, pid)
  pending_defs defs;
  uint64_t last_dev = 0, last_ino = 0;  // of the previous new file in this block
  path_id last_parent = 0;              // of the previous new path in this block

  // the open chunk
  std::vector<codec::group_encoder> groups;
  std::unordered_map<thread_id, size_t> group_of;
  uint32_t chunk_events = 0;
  uint32_t chunk_limit = 0;  // grows to opt.chunk_events: a reader's first event comes fast
  uint64_t time_unit = 1;    // event times are rounded down to multiples of it
  size_t chunk_bytes = 0;
  uint64_t chunk_min_ts = 0, chunk_max_ts = 0;
  uint64_t last_flush_ts = 0;

  std::vector<tree_entry> tree;
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> link_groups;  // (dev, ino) -> group
  std::map<uint32_t, uint64_t> lost;
  std::map<std::pair<op, fd_kind>, uint64_t> nonfile;
  uint64_t incomplete = 0;
  uint64_t pauses = 0, paused_ns = 0, filtered = 0;
  std::vector<fb::ClockPair> clocks;

  std::vector<fb::BlockRef> blocks;
  trace_summary sum;

  void write_frame(std::span<const uint8_t> frame) {
    if (!status) return;
    status = write_all(fd, path, frame);
    if (status) file_offset += frame.size();
  }

  bool pending() const {
    return chunk_events || !tree.empty() || !defs.empty() || !lost.empty() || !nonfile.empty() ||
           incomplete || !clocks.empty() || pauses || paused_ns || filtered;
  }

  path_id new_path(path_id parent, std::string_view name) {
    const path_id id = ++paths;
    if (defs.path_parent.empty()) defs.path_first = id;
    defs.path_parent.push_back(parent - last_parent);  // siblings come together: mostly 0
    last_parent = parent;
    defs.path_name_len.push_back(static_cast<uint32_t>(name.size()));
    defs.path_names.insert(defs.path_names.end(), name.begin(), name.end());
    return id;
  }

  void write_header(const header_info& h);
  void write_block();
  flatbuffers::Offset<fb::Defs> build_defs(flatbuffers::FlatBufferBuilder& fbb);
  flatbuffers::Offset<fb::Chunk> build_chunk(flatbuffers::FlatBufferBuilder& fbb);
  flatbuffers::Offset<fb::Counters> build_counters(flatbuffers::FlatBufferBuilder& fbb);
  void write_footer();
};

result<trace_writer> trace_writer::create(const std::string& path, const header_info& header,
                                          writer_options options) {
  auto m = std::make_unique<impl>();
  m->path = path;
  m->opt = options;
  m->chunk_limit = std::min<uint32_t>(options.chunk_events, 16384);
  m->time_unit = std::clamp<uint32_t>(options.time_unit_ns, 1, max_time_unit_ns);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (options.overwrite ? O_TRUNC : O_EXCL);
  m->fd = ::open(path.c_str(), flags, 0600);
  if (m->fd < 0) {
    if (errno == EEXIST) return failure("{} exists; choose another name or remove it", path);
    return failure("cannot create {}: {}", path, std::strerror(errno));
  }
  if (options.overwrite) ::fchmod(m->fd, 0600);
  m->new_path(no_id, "");  // root_path
  m->write_header(header);
  if (!m->status) {
    ::close(m->fd);
    ::unlink(path.c_str());  // holding not even a header (with overwrite: already truncated)
    return tl::unexpected(m->status.error());
  }
  return trace_writer(std::move(m));
}

trace_writer::trace_writer(std::unique_ptr<impl> m) : impl_(std::move(m)) {}
trace_writer::trace_writer(trace_writer&&) noexcept = default;

// A destructor cannot report: the blocks written so far stay readable.
trace_writer::~trace_writer() {
  if (!impl_ || impl_->fd < 0) return;
  try {
    if (!impl_->finished) flush();
  } catch (const std::bad_alloc&) {  // building the last block: what was written stays
  }
  ::close(impl_->fd);
}

result<void> trace_writer::status() const {
  return impl_->status;
}

void trace_writer::impl::write_header(const header_info& h) {
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

path_id trace_writer::intern_child(path_id parent, std::string_view name) {
  if (!valid_component(name)) return no_id;
  return impl_->path_ids.get({parent, name}, [&] { return impl_->new_path(parent, name); });
}

path_id trace_writer::intern_path(std::string_view absolute) {
  if (absolute.empty() || absolute[0] != '/') return no_id;
  path_id id = root_path;
  size_t pos = 0;
  while (pos < absolute.size()) {
    const size_t slash = absolute.find('/', pos);
    const size_t end = slash == std::string_view::npos ? absolute.size() : slash;
    if (end > pos && (id = intern_child(id, absolute.substr(pos, end - pos))) == no_id)
      return no_id;
    pos = end + 1;
  }
  return id;
}

string_id trace_writer::intern_string(std::string_view s) {
  auto& m = *impl_;
  return m.string_ids.get(std::string(s), [&] {
    const string_id id = ++m.strings;
    if (m.defs.string_len.empty()) m.defs.string_first = id;
    m.defs.string_len.push_back(static_cast<uint32_t>(s.size()));
    m.defs.string_bytes.insert(m.defs.string_bytes.end(), s.begin(), s.end());
    return id;
  });
}

file_id trace_writer::intern_file(const file_info& f) {
  auto& m = *impl_;
  return m.file_ids.get(f, [&] {
    const file_id id = ++m.files;
    if (m.defs.file_dev.empty()) m.defs.file_first = id;
    // Deltas to the previous new file: inode numbers come in runs.
    m.defs.file_dev.push_back(f.dev - m.last_dev);
    m.defs.file_ino.push_back(f.ino - m.last_ino);
    m.last_dev = f.dev;
    m.last_ino = f.ino;
    m.defs.file_gen.push_back(f.gen);
    m.defs.file_type.push_back(f.type);
    m.defs.file_host.push_back(f.host);
    m.defs.file_hosts |= f.host != 0;
    return id;
  });
}

thread_id trace_writer::add_thread(const thread_info& t) {
  auto& m = *impl_;
  const thread_id id = ++m.threads;
  if (m.defs.thread_tid.empty()) m.defs.thread_first = id;
  m.defs.thread_tid.push_back(t.tid);
  m.defs.thread_pid.push_back(t.pid);
  m.defs.thread_ppid.push_back(t.ppid);
  m.defs.thread_comm.push_back(t.comm);
  m.defs.thread_fd_table.push_back(t.fd_table);
  m.defs.thread_host_tid.push_back(t.host_tid);
  m.defs.thread_host_pid.push_back(t.host_pid);
  m.defs.thread_root.push_back(t.root);
  m.defs.thread_host.push_back(t.host);
  m.defs.thread_hosts |= t.host != 0;
  // pids of two containers may be equal, and those of two hosts
  m.pids.insert({t.host, t.host_pid ? t.host_pid : t.pid});
  return id;
}

uint32_t trace_writer::add_root(trace_root r) {
  auto& m = *impl_;
  const uint32_t id = ++m.roots;
  if (id > 1) {
    r.top = m.new_path(no_id, fmt::format("root{}", id));
    m.root_tops.push_back(r.top);
  } else {
    r.top = root_path;
  }
  if (m.defs.root_top.empty()) m.defs.root_first = id;
  m.defs.root_top.push_back(r.top);
  m.defs.root_mnt_ns.push_back(r.mnt_ns);
  m.defs.root_dev.push_back(r.dev);
  m.defs.root_ino.push_back(r.ino);
  m.defs.root_where.push_back(r.where);
  m.sum.roots = m.roots;
  return id;
}

path_id trace_writer::root_top(uint32_t root) const {
  return root <= 1 ? root_path : impl_->root_tops.at(root - 2);
}

void trace_writer::append(const event& given) {
  auto& m = *impl_;
  if (m.finished) return;  // a caller's bug; the trace is closed
  event e = given;
  round_times(e, m.time_unit);
  auto [it, added] = m.group_of.try_emplace(e.thread, m.groups.size());
  if (added) m.groups.emplace_back(e.ts, m.time_unit);
  auto& g = m.groups[it->second];
  const size_t before = g.bytes();
  g.add(e);
  m.chunk_bytes += g.bytes() - before;
  if (m.chunk_events == 0 || e.ts < m.chunk_min_ts) m.chunk_min_ts = e.ts;
  if (e.ts > m.chunk_max_ts) m.chunk_max_ts = e.ts;
  ++m.chunk_events;
  m.sum.add(e);
  if (m.chunk_events >= m.chunk_limit || m.chunk_bytes + m.defs.bytes() >= m.opt.chunk_bytes)
    flush();
}

void trace_writer::add_tree_entry(const tree_entry& e) {
  auto& m = *impl_;
  m.tree.push_back(e);
  m.sum.tree.add(e);
  if (m.tree.size() >= m.opt.tree_entries) flush();
}

uint32_t trace_writer::link_group(uint64_t dev, uint64_t ino) {
  auto [it, added] = impl_->link_groups.try_emplace({dev, ino}, 0);
  if (added) it->second = static_cast<uint32_t>(impl_->link_groups.size());
  return it->second;
}

void trace_writer::add_lost(uint32_t cpu, uint64_t count) {
  if (count == 0) return;
  impl_->lost[cpu] += count;
  impl_->sum.lost_events += count;
}

void trace_writer::add_pauses(uint64_t count, uint64_t paused_ns) {
  if (count == 0 && paused_ns == 0) return;
  impl_->pauses += count;
  impl_->paused_ns += paused_ns;
  impl_->sum.pauses += count;
  impl_->sum.paused_ns += paused_ns;
}

void trace_writer::add_filtered(uint64_t count) {
  impl_->filtered += count;
  impl_->sum.filtered += count;
}

void trace_writer::add_nonfile(op o, fd_kind k, uint64_t count) {
  impl_->nonfile[{o, k}] += count;
  impl_->sum.nonfile[{o, k}] += count;
}

void trace_writer::mark_incomplete(uint64_t bits) {
  impl_->incomplete |= bits;
  impl_->sum.incomplete |= bits;
}

void trace_writer::add_clock_pair(uint64_t monotonic_ns, int64_t realtime_ns) {
  impl_->clocks.emplace_back(monotonic_ns, realtime_ns);
}

void trace_writer::flush() {
  if (impl_->pending()) impl_->write_block();
}

void trace_writer::flush_if_due(uint64_t now_ts) {
  auto& m = *impl_;
  if (now_ts - m.last_flush_ts >= m.opt.chunk_interval_ns) {
    flush();
    m.last_flush_ts = now_ts;
  }
}

// The block's parts, each built into `fbb` when the block has one.
flatbuffers::Offset<fb::Defs> trace_writer::impl::build_defs(
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

flatbuffers::Offset<fb::Chunk> trace_writer::impl::build_chunk(
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

flatbuffers::Offset<fb::Counters> trace_writer::impl::build_counters(
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

void trace_writer::impl::write_block() {
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

void trace_writer::impl::write_footer() {
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

result<void> trace_writer::finish() {
  auto& m = *impl_;
  if (m.finished) return m.status;
  flush();
  m.write_footer();
  m.finished = true;
  if (m.status && ::fsync(m.fd) != 0 && errno != EINVAL)
    m.status = failure("{}: fsync: {}", m.path, std::strerror(errno));
  return m.status;
}

void trace_writer::abandon() {
  if (!impl_ || impl_->fd < 0) return;
  ::close(impl_->fd);
  impl_->fd = -1;
  impl_->finished = true;
  ::unlink(impl_->path.c_str());
}

const trace_summary& trace_writer::summary() const {
  auto& m = *impl_;
  m.sum.paths = m.paths;
  m.sum.strings = m.strings;
  m.sum.files = m.files;
  m.sum.threads = m.threads;
  m.sum.processes = m.pids.size();
  return m.sum;
}

uint64_t trace_writer::file_bytes() const {
  return impl_->file_offset;
}
const std::string& trace_writer::path() const {
  return impl_->path;
}

}  // namespace fsrr
