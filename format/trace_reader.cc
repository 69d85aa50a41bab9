#include "trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <type_traits>

#include <fmt/format.h>

#include "column_codec.h"
#include "container.h"
#include "tables.h"
#include "trace_generated.h"
#include "trace_reader_impl.h"

namespace fsrr {
namespace {

// The verifier checks a vector's length field for 4-byte alignment, not its elements: a
// hostile buffer can put a vector of 8-byte values at 4 mod 8, and reading it in place is a
// misaligned load. Buffers start 8-aligned (decompressed or copied), so this checks both.
template <typename T>
bool aligned(const flatbuffers::Vector<T>* v) {
  using elem = std::remove_pointer_t<T>;
  // An empty vector's data is never read, and the builder does not align it.
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % alignof(elem) == 0;
}

bool aligned(const fb::Block& b) {
  const auto* d = b.defs();
  const auto* t = b.tree();
  const auto* c = b.counters();
  return (!d || (aligned(d->file_dev()) && aligned(d->file_ino()))) &&
         (!t || (aligned(t->size()) && aligned(t->allocated()) && aligned(t->atime_ns()) &&
                 aligned(t->mtime_ns()) && aligned(t->ctime_ns()) &&
                 aligned(t->extent_offset()) && aligned(t->extent_length()))) &&
         (!c || (aligned(c->lost_count()) && aligned(c->nonfile_count()) &&
                 aligned(c->clocks())));
}

bool aligned(const fb::Footer& f) {
  return aligned(f.blocks()) && aligned(f.op_counts()) && aligned(f.nonfile_count());
}

flatbuffers::Verifier::Options verifier_options() {
  flatbuffers::Verifier::Options o;
  o.max_depth = 16;
  o.max_tables = 1u << 24;
  return o;
}

}  // namespace

result<trace_reader> trace_reader::open(const std::string& path) {
  auto m = std::make_unique<impl>();
  m->file_path = path;
  FSRR_TRY(m->open_file());
  FSRR_TRY(m->load_tables());
  FSRR_TRY(m->compute_summary());
  return trace_reader(std::move(m));
}

trace_reader::trace_reader(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
trace_reader::~trace_reader() = default;
trace_reader::trace_reader(trace_reader&&) noexcept = default;

// The impl owns the file: a rejected trace unmaps and closes it as its impl goes.
trace_reader::impl::~impl() {
  if (map) ::munmap(const_cast<uint8_t*>(map), size);
  if (fd >= 0) ::close(fd);
}

result<void> trace_reader::impl::open_file() {
  fd = ::open(file_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure("cannot open {}: {}", file_path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  size = static_cast<size_t>(st.st_size);
  if (size == 0) return fail("empty file, not an fsrr trace");
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return fail(fmt::format("mmap: {}", std::strerror(errno)));
  map = static_cast<const uint8_t*>(p);

  const std::span<const uint8_t> all(map, size);
  auto scan = container::scan(all);
  if (scan.frames.empty() || scan.frames[0].kind != frame_ref::header) {
    if (size >= 4 && std::memcmp(map, "\x5a\x2a\x4d\x18", 4) == 0)
      return fail("header is cut short (truncated trace)");
    return fail("not an fsrr trace");
  }
  FSRR_TRY(read_header(scan.frames[0]));

  // A crash can leave zero-filled blocks after the last write: that is a torn tail too.
  if (!scan.corrupt.empty() &&
      std::all_of(map + scan.end, map + size, [](uint8_t b) { return b == 0; })) {
    scan.torn = fmt::format("{} zero bytes at offset {}", size - scan.end, scan.end);
    scan.corrupt.clear();
  }
  const bool closed = size >= 4 && std::memcmp(map + size - 4, "FSRE", 4) == 0;
  if (!scan.corrupt.empty()) return fail(scan.corrupt);
  if (!scan.torn.empty() && closed)
    return fail(fmt::format("{}; the file was closed cleanly, so it is corrupted", scan.torn));

  for (size_t i = 1; i < scan.frames.size(); ++i) {
    const auto& f = scan.frames[i];
    switch (f.kind) {
      case frame_ref::block:
        if (footer) return fail(fmt::format("block frame at offset {} after the footer", f.offset));
        blocks.push_back(f);
        break;
      case frame_ref::footer:
        if (i + 1 != scan.frames.size())
          return fail(fmt::format("footer at offset {} is not the last frame", f.offset));
        FSRR_TRY(read_footer(f));
        break;
      case frame_ref::header:
        return fail(fmt::format("second header at offset {}", f.offset));
      case frame_ref::skipped:
        break;  // a frame kind from a newer writer
    }
  }
  if (!scan.torn.empty())
    damage = fmt::format("torn tail: {}; {} complete blocks readable", scan.torn, blocks.size());
  return {};
}

result<void> trace_reader::impl::read_header(const frame_ref& f) {
  const auto opened = container::open_skippable(bytes(f), false);
  if (!opened) return fail("header: " + opened.error().message);
  const std::span<const uint8_t> payload = *opened;
  flatbuffers::Verifier v(payload.data(), payload.size(), verifier_options());
  if (!v.VerifyBuffer<fb::Header>("FSRH")) return fail("header: not a valid fsrr header");
  const auto* h = flatbuffers::GetRoot<fb::Header>(payload.data());
  if (h->format_major() != format_major && h->format_major() != format_major_hosts &&
      h->format_major() != format_major_units)
    return fail(fmt::format(
        "format version {}.{} is not supported (this fsrr reads {}.x, {}.x and {}.x)",
        h->format_major(), h->format_minor(), format_major, format_major_hosts,
        format_major_units));
  header.format_major = h->format_major();
  header.format_minor = h->format_minor();
  header.time_unit_ns = h->time_unit_ns() ? h->time_unit_ns() : 1;
  if (header.time_unit_ns > max_time_unit_ns)
    return fail(fmt::format("header: a time unit of {} ns (at most {})", header.time_unit_ns,
                            max_time_unit_ns));
  header.writer = h->writer() ? h->writer()->str() : "";
  header.kind = h->kind() == fb::TraceKind::Snapshot ? trace_kind::snapshot : trace_kind::recording;
  header.clock_monotonic_ns = h->clock_monotonic_ns();
  header.clock_realtime_ns = h->clock_realtime_ns();
  header.hostname = h->hostname() ? h->hostname()->str() : "";
  header.kernel = h->kernel() ? h->kernel()->str() : "";
  if (h->command())
    for (const auto* s : *h->command()) header.command.push_back(s->str());
  header.page_size = h->page_size();
  header.cpus = h->cpus();
  header.derived = h->derived() ? h->derived()->str() : "";
  header.key_id = h->key_id() ? h->key_id()->str() : "";
  header.trace_id = h->trace_id() ? h->trace_id()->str() : "";
  if (h->hosts()) {
    if (h->hosts()->size() > 0xffff) return fail("header: more than 65,535 hosts");
    for (const auto* x : *h->hosts()) {
      host_info hi;
      hi.name = x->name() ? x->name()->str() : "";
      hi.kernel = x->kernel() ? x->kernel()->str() : "";
      hi.trace_id = x->trace_id() ? x->trace_id()->str() : "";
      if (x->command())
        for (const auto* c : *x->command()) hi.command.push_back(c->str());
      hi.clock_monotonic_ns = x->clock_monotonic_ns();
      hi.clock_realtime_ns = x->clock_realtime_ns();
      hi.offset_ns = x->offset_ns();
      hi.cpus = x->cpus();
      header.hosts.push_back(std::move(hi));
    }
  }
  if (!h->op_names() || !h->op_fields() || h->op_names()->size() != h->op_fields()->size() ||
      h->op_names()->size() > 256)
    return fail("header: op table missing or malformed");
  for (size_t i = 0; i < h->op_names()->size(); ++i) {
    codec::op_map::entry e;
    e.fields = h->op_fields()->Get(i);
    if (auto o = op_from_name(h->op_names()->Get(i)->string_view())) {
      e.known = true;
      e.kind = *o;
    }
    ops.codes.push_back(e);
  }
  return {};
}

result<void> trace_reader::impl::read_footer(const frame_ref& f) {
  if (f.offset + f.size != size) return fail("footer does not end the file");
  const auto payload = container::open_skippable(bytes(f), true);
  if (!payload) return fail("footer: " + payload.error().message);
  footer_payload.assign(payload->begin(), payload->end());
  flatbuffers::Verifier v(footer_payload.data(), footer_payload.size(), verifier_options());
  if (!v.VerifyBuffer<fb::Footer>("FSRF")) return fail("footer: not a valid fsrr footer");
  footer = flatbuffers::GetRoot<fb::Footer>(footer_payload.data());
  if (!aligned(*footer)) return fail("footer: a column of 8-byte values is misaligned");
  const auto* refs = footer->blocks();
  if (len(refs) != blocks.size()) return fail("footer index disagrees with the blocks in the file");
  for (size_t i = 0; i < blocks.size(); ++i)
    if (refs->Get(i)->offset() != blocks[i].offset || refs->Get(i)->size() != blocks[i].size)
      return fail(fmt::format("footer index disagrees with block {}", i));
  return {};
}

// The mapped pages of a frame read are dropped from the process (they stay in the page
// cache): otherwise every page of a trace read once would count in its resident memory until
// the end, 100 MB for a copy of 1 M files.
void trace_reader::impl::forget(const frame_ref& f) const {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = reinterpret_cast<uintptr_t>(map + f.offset) & ~(page - 1);
  const uintptr_t to = reinterpret_cast<uintptr_t>(map + f.offset + f.size);
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

result<const fb::Block*> trace_reader::impl::load_block(size_t i, std::vector<uint8_t>& buf) const {
  const auto decompressed = container::decompress_frame(bytes(blocks[i]), buf);
  forget(blocks[i]);
  if (!decompressed) return fail_block(i, decompressed.error().message);
  flatbuffers::Verifier v(buf.data(), buf.size(), verifier_options());
  if (!v.VerifyBuffer<fb::Block>("FSRB")) return fail_block(i, "not a valid block");
  const auto* b = flatbuffers::GetRoot<fb::Block>(buf.data());
  if (!aligned(*b)) return fail_block(i, "a column of 8-byte values is misaligned");
  if (b->seq() != i) return fail_block(i, fmt::format("sequence number {} out of place", b->seq()));
  return b;
}

result<codec::group_input> trace_reader::impl::group_of(size_t i, const fb::ThreadEvents& g) const {
  const uint32_t thread = g.thread();
  if (thread == no_id || thread >= threads.size())
    return fail_block(i, fmt::format("events of unknown thread {}", thread));
  codec::group_input in{thread, g.count(), g.first_ts(), {}, header.time_unit_ns};
  const flatbuffers::Vector<uint8_t>* cols[codec::column_count] = {
      g.op(),   g.gap(),   g.dur(),    g.result(),  g.fd(),   g.fd2(),   g.file(), g.file2(),
      g.path(), g.path2(), g.offset(), g.offset2(), g.size(), g.flags(), g.mode(), g.aux(),
      g.via()};
  for (int col = 0; col < codec::column_count; ++col)
    if (cols[col]) in.cols[col] = {cols[col]->data(), cols[col]->size()};
  if (in.count > in.cols[codec::c_op].size())
    return fail_block(i, "event count exceeds its columns");
  return in;
}

result<void> trace_reader::impl::check_ids(size_t i, const std::vector<event>& v) const {
  const size_t np = paths.size(), nf = files.size(), ns = strings.size();
  for (const event& e : v) {
    if (e.path >= np || e.path2 >= np || e.file >= nf || e.file2 >= nf)
      return fail_block(
          i, fmt::format("thread {}: event refers to an unknown path or file", e.thread));
    if (aux_is_string(e.kind) && e.aux >= ns)
      return fail_block(i, fmt::format("thread {}: event names an unknown string", e.thread));
  }
  return {};
}

// A batch at a time: a group's count is bounded only by its op column, so decoding a whole
// group at once would let a small hostile block (zeros compress well) claim ~100 bytes of
// memory per byte of its columns.
result<void> trace_reader::impl::decode_chunk(size_t i, const fb::Chunk& c,
                                              const std::function<void(const event&)>& each,
                                              uint64_t& unknown) const {
  std::vector<event> batch;
  for (size_t k = 0; c.threads() && k < c.threads()->size(); ++k) {
    const auto in = group_of(i, *c.threads()->Get(k));
    if (!in) return tl::unexpected(in.error());
    codec::group_decoder dec(*in, ops);
    while (!dec.done()) {
      batch.clear();
      if (auto r = dec.decode(batch, 4096, unknown); !r) return fail_block(i, r.error().message);
      FSRR_TRY(check_ids(i, batch));
      for (const event& e : batch) each(e);
    }
  }
  return {};
}

// Without a footer (a torn trace) the counts come from decoding every event once.
result<void> trace_reader::impl::compute_summary() {
  if (summary_ready) return {};
  sum = trace_summary{};
  for (const auto& e : tree) sum.tree.add(e);
  std::set<std::pair<uint16_t, int32_t>> pids;
  for (size_t t = 1; t < threads.size(); ++t)  // pids of two containers (hosts) may be equal
    pids.insert({threads[t].host, threads[t].host_pid ? threads[t].host_pid : threads[t].pid});
  if (footer) {
    sum.events = footer->events();
    sum.first_ts = footer->first_ts();
    sum.last_ts = footer->last_ts();
    if (const auto* oc = footer->op_counts()) {
      for (size_t k = 0; k < oc->size() && k < ops.codes.size(); ++k) {
        if (ops.codes[k].known)
          sum.op_counts[static_cast<size_t>(ops.codes[k].kind)] += oc->Get(k);
        else
          sum.unknown_ops += oc->Get(k);
      }
    }
    sum.bytes_read = footer->bytes_read();
    sum.bytes_written = footer->bytes_written();
  } else {
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto b = load_block(i, buf);
      if (!b) return tl::unexpected(b.error());
      if (!(*b)->chunk()) continue;
      FSRR_TRY(decode_chunk(
          i, *(*b)->chunk(), [&](const event& e) { sum.add(e); }, sum.unknown_ops));
    }
  }
  sum.lost_events = lost;
  sum.incomplete = incomplete;
  sum.pauses = pauses;
  sum.paused_ns = paused_ns;
  sum.filtered = filtered;
  sum.roots = roots.size();
  sum.nonfile = nonfile;
  sum.paths = paths.size() - 1;
  sum.strings = strings.size() - 1;
  sum.files = files.size() - 1;
  sum.threads = threads.size() - 1;
  sum.processes = pids.size();
  summary_ready = true;
  return {};
}

const header_info& trace_reader::header() const {
  return impl_->header;
}
bool trace_reader::has_footer() const {
  return impl_->footer != nullptr;
}
const std::string& trace_reader::damage() const {
  return impl_->damage;
}
uint64_t trace_reader::file_bytes() const {
  return impl_->size;
}
size_t trace_reader::block_count() const {
  return impl_->blocks.size();
}

bool trace_reader::complete() {
  const auto& s = summary();
  return has_footer() && damage().empty() && s.lost_events == 0 && s.incomplete == 0;
}

const trace_summary& trace_reader::summary() {
  return impl_->sum;
}

const tree_table& trace_reader::tree() {
  return impl_->tree;
}

size_t trace_reader::path_count() {
  return impl_->paths.size() - 1;
}

path_entry trace_reader::path(path_id id) {
  if (id == no_id || id >= impl_->paths.size()) return {no_id, ""};
  const auto& p = impl_->paths[id];
  return {p.parent, impl_->names.get(p.name)};
}

// Parents always precede children (checked on load), so these walks end.
path_id trace_reader::top_of(path_id id) {
  path_id p = id;
  while (p != no_id && path(p).parent != no_id) p = path(p).parent;
  return p;
}

uint32_t trace_reader::root_of(path_id id) {
  const path_id top = top_of(id);
  const auto& tops = impl_->root_of_top;
  return top != root_path && top < tops.size() && tops[top] ? tops[top] : 1;
}

std::string trace_reader::path_string(path_id id) {
  if (id == no_id) return "";
  std::vector<std::string_view> parts;
  for (path_id p = id; path(p).parent != no_id; p = path(p).parent) parts.push_back(path(p).name);
  if (parts.empty()) return "/";
  std::string s;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    s += '/';
    s += *it;
  }
  return s;
}

std::string trace_reader::placed_path(path_id id) {
  if (id == no_id || roots().size() < 2) return path_string(id);
  const std::string p = path_string(id);
  const std::string top = fmt::format("/root{}", root_of(id));
  return p == "/" ? top : top + p;
}

const std::vector<trace_root>& trace_reader::roots() {
  return impl_->roots;
}

// Index 0 of each table is its "none" entry, which these hand out for an unknown id.
const std::string& trace_reader::string(string_id id) {
  return impl_->strings[id < impl_->strings.size() ? id : 0];
}

file_info trace_reader::file(file_id id) {
  const auto& f = impl_->files[id < impl_->files.size() ? id : 0];
  const auto& [host, dev] = impl_->devs[f.dev];
  return {dev, f.ino, f.gen, f.type, host};
}

std::optional<uint16_t> trace_reader::impl::dev_index(uint16_t host, uint64_t dev) {
  if (devs[last_dev] == std::pair{host, dev}) return last_dev;
  // A tree, not a search of devs or a hash: a hostile trace may alternate among 65,535
  // devices, or choose numbers that collide.
  auto [at, added] = dev_ids.try_emplace({host, dev}, static_cast<uint16_t>(devs.size()));
  if (added) {
    if (devs.size() > 0xffff) {
      dev_ids.erase(at);
      return std::nullopt;
    }
    devs.emplace_back(host, dev);
  }
  return last_dev = at->second;
}

const thread_info& trace_reader::thread(thread_id id) {
  return impl_->threads[id < impl_->threads.size() ? id : 0];
}

const std::vector<std::pair<uint64_t, int64_t>>& trace_reader::clock_pairs() {
  return impl_->clocks;
}

size_t trace_reader::string_count() {
  return impl_->strings.size() - 1;
}
size_t trace_reader::file_count() {
  return impl_->files.size() - 1;
}
size_t trace_reader::thread_count() const {
  return impl_->threads.size() - 1;
}

}  // namespace fsrr
