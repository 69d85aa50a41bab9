#include "trace_writer.h"

#include <fcntl.h>
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

#include "trace_writer_state.h"

namespace fsrr {

result<trace_writer> trace_writer::create(const std::string& path, const header_info& header,
                                          writer_options options) {
  auto m = std::make_unique<trace_writer_state>();
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

trace_writer::trace_writer(std::unique_ptr<trace_writer_state> m) : impl_(std::move(m)) {}
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
