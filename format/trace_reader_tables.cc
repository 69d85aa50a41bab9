// The tables a trace's blocks define (paths, strings, files, threads, roots), their tree and
// their counters: applied in file order, once each, when the trace is opened
// (trace_reader.cc reads the frames and decodes the events).
#include <algorithm>

#include <fmt/format.h>

#include "tables.h"
#include "trace_generated.h"
#include "trace_reader_impl.h"
#include "tree_columns.h"

namespace fsrr {

// Paths: names in one blob, each entry its parent (as a delta) and its name's length.
result<void> trace_reader::impl::apply_paths(size_t i, const fb::Defs& d) {
  const size_t np = len(d.path_parent());
  if (!np) return {};
  if (d.path_first() != paths.size() || len(d.path_name_len()) != np)
    return fail_block(i, "path table entries out of sequence");
  const auto* names = d.path_names();
  const size_t blob = names ? names->size() : 0;
  uint64_t named = 0;
  for (size_t k = 0; k < np; ++k) named += d.path_name_len()->Get(k);
  if (named != blob)
    return fail_block(i, fmt::format("path names take {} bytes of a blob of {}", named, blob));
  const char* bytes = blob ? reinterpret_cast<const char*>(names->data()) : "";
  size_t pos = 0;
  uint32_t parent = 0;  // stored as deltas to the previous entry's parent
  for (size_t k = 0; k < np; ++k) {
    parent += d.path_parent()->Get(k);
    const uint32_t n = d.path_name_len()->Get(k);
    if (n > blob - pos) return fail_block(i, "path name runs past its table");
    const std::string_view name(bytes + pos, n);
    pos += n;
    const bool is_root = paths.size() == root_path;
    // A path without parent beyond root_path is the top of a further root (checked below).
    if (is_root ? (parent != no_id || !name.empty())
                : (parent >= paths.size() || !valid_component(name)))
      return fail_block(i, fmt::format("invalid path entry {}", paths.size()));
    const uint64_t at = this->names.add(name);
    if (at > UINT32_MAX) return fail_block(i, "path names beyond 4 GiB");
    paths.push_back({parent, static_cast<uint32_t>(at)});
  }
  return {};
}

result<void> trace_reader::impl::apply_strings(size_t i, const fb::Defs& d) {
  const size_t ns = len(d.string_len());
  if (!ns) return {};
  if (d.string_first() != strings.size()) return fail_block(i, "string table out of sequence");
  const auto* b = d.string_bytes();
  uint64_t held = 0;
  for (size_t k = 0; k < ns; ++k) held += d.string_len()->Get(k);
  if (held != (b ? b->size() : 0))
    return fail_block(
        i, fmt::format("strings take {} bytes of a blob of {}", held, b ? b->size() : 0));
  size_t pos = 0;
  for (size_t k = 0; k < ns; ++k) {
    const uint32_t n = d.string_len()->Get(k);
    if (!b || n > b->size() - pos) return fail_block(i, "string runs past its table");
    strings.emplace_back(reinterpret_cast<const char*>(b->data()) + pos, n);
    pos += n;
  }
  return {};
}

// Files: device and inode as deltas to the previous entry, a device index per host.
result<void> trace_reader::impl::apply_files(size_t i, const fb::Defs& d) {
  const size_t nf = len(d.file_dev());
  if (!nf) return {};
  if (d.file_first() != files.size() || len(d.file_ino()) != nf || len(d.file_gen()) != nf ||
      len(d.file_type()) != nf || (d.file_host() && len(d.file_host()) != nf))
    return fail_block(i, "file table out of sequence");
  uint64_t dev = 0, ino = 0;  // stored as deltas to the previous entry
  for (size_t k = 0; k < nf; ++k) {
    dev += d.file_dev()->Get(k);
    ino += d.file_ino()->Get(k);
    const uint32_t type = d.file_type()->Get(k);
    const uint16_t host = d.file_host() ? d.file_host()->Get(k) : 0;
    if (host >= std::max<size_t>(header.hosts.size(), 1))
      return fail_block(i, fmt::format("file {} names an unknown host", files.size()));
    const auto di = dev_index(host, dev);
    if (!di) return fail_block(i, "a trace of more than 65,535 devices");
    if (type > 0xffff) return fail_block(i, fmt::format("invalid file entry {}", files.size()));
    files.push_back({ino, d.file_gen()->Get(k), *di, static_cast<uint16_t>(type)});
  }
  return {};
}

result<void> trace_reader::impl::apply_threads(size_t i, const fb::Defs& d) {
  const size_t nt = len(d.thread_tid());
  if (!nt) return {};
  if (d.thread_first() != threads.size() || len(d.thread_pid()) != nt ||
      len(d.thread_ppid()) != nt || len(d.thread_comm()) != nt || len(d.thread_fd_table()) != nt)
    return fail_block(i, "thread table out of sequence");
  const bool host = len(d.thread_host_tid()) == nt && len(d.thread_host_pid()) == nt &&
                    len(d.thread_root()) == nt;  // 1.1
  if ((!host && (len(d.thread_host_tid()) || len(d.thread_host_pid()) || len(d.thread_root()))) ||
      (d.thread_host() && len(d.thread_host()) != nt))
    return fail_block(i, "thread table columns disagree in length");
  for (size_t k = 0; k < nt; ++k) {
    const uint32_t comm = d.thread_comm()->Get(k);
    if (comm >= strings.size()) return fail_block(i, "thread name refers to an unknown string");
    thread_info t{d.thread_tid()->Get(k), d.thread_pid()->Get(k), d.thread_ppid()->Get(k),
                  comm, d.thread_fd_table()->Get(k)};
    if (host) {
      t.host_tid = d.thread_host_tid()->Get(k);
      t.host_pid = d.thread_host_pid()->Get(k);
      t.root = d.thread_root()->Get(k);
    }
    t.host = d.thread_host() ? d.thread_host()->Get(k) : 0;
    if (t.host >= std::max<size_t>(header.hosts.size(), 1))
      return fail_block(i, fmt::format("thread {} names an unknown host", threads.size()));
    threads.push_back(t);
  }
  return {};
}

// Roots (chroots, mount namespaces): each the top of a parentless path.
result<void> trace_reader::impl::apply_roots(size_t i, const fb::Defs& d) {
  const size_t nr = len(d.root_top());
  if (!nr) return {};
  if (d.root_first() != roots.size() + 1 || len(d.root_mnt_ns()) != nr ||
      len(d.root_dev()) != nr || len(d.root_ino()) != nr || len(d.root_where()) != nr)
    return fail_block(i, "root table out of sequence");
  for (size_t k = 0; k < nr; ++k) {
    const uint32_t top = d.root_top()->Get(k), where = d.root_where()->Get(k);
    const bool first = roots.empty();
    if (top >= paths.size() || (first ? top != root_path : paths[top].parent != no_id) ||
        (top < root_of_top.size() && root_of_top[top]) || where >= strings.size())
      return fail_block(i, fmt::format("invalid root {}", roots.size() + 1));
    roots.push_back({top, d.root_mnt_ns()->Get(k), d.root_dev()->Get(k), d.root_ino()->Get(k),
                     where});
    if (top >= root_of_top.size()) root_of_top.resize(top + 1, 0);
    root_of_top[top] = static_cast<uint32_t>(roots.size());
  }
  return {};
}

// A block's definitions extend the tables of the blocks before it, each in sequence.
result<void> trace_reader::impl::apply_defs(size_t i, const fb::Defs& d) {
  FSRR_TRY(apply_paths(i, d));
  FSRR_TRY(apply_strings(i, d));
  FSRR_TRY(apply_files(i, d));
  FSRR_TRY(apply_threads(i, d));
  FSRR_TRY(apply_roots(i, d));
  // Every parentless path but root_path is the top of a root of this block or an earlier one.
  for (size_t p = std::max<size_t>(checked_tops, root_path + 1); p < paths.size(); ++p)
    if (p != root_path && paths[p].parent == no_id &&
        (p >= root_of_top.size() || !root_of_top[p]))
      return fail_block(i, fmt::format("path {} has no parent and is no root's top", p));
  checked_tops = paths.size();
  for (size_t t = checked_threads; t < threads.size(); ++t)
    if (threads[t].root > std::max<size_t>(roots.size(), 1))
      return fail_block(i, fmt::format("thread {} has an unknown root", t));
  checked_threads = threads.size();
  return {};
}

result<void> trace_reader::impl::apply_tree(size_t i, const fb::Tree& t) {
  if (auto r = read_tree(t, {paths.size(), strings.size(), files.size()}, tree); !r)
    return fail_block(i, r.error().message);
  return {};
}

result<void> trace_reader::impl::apply_counters(size_t i, const fb::Counters& c) {
  if (len(c.lost_cpu()) != len(c.lost_count()) || len(c.nonfile_op()) != len(c.nonfile_kind()) ||
      len(c.nonfile_op()) != len(c.nonfile_count()))
    return fail_block(i, "counter columns disagree in length");
  for (size_t k = 0; k < len(c.lost_count()); ++k) lost += c.lost_count()->Get(k);
  for (size_t k = 0; k < len(c.nonfile_op()); ++k) {
    const uint16_t code = c.nonfile_op()->Get(k);
    const uint8_t kind = c.nonfile_kind()->Get(k);
    if (code >= ops.codes.size() || kind >= static_cast<uint8_t>(fd_kind::count))
      return fail_block(i, "non-file counter with an unknown op or kind");
    if (ops.codes[code].known)
      nonfile[{ops.codes[code].kind, static_cast<fd_kind>(kind)}] += c.nonfile_count()->Get(k);
  }
  incomplete |= c.incomplete();
  if (c.clocks())
    for (const fb::ClockPair* p : *c.clocks()) clocks.push_back({p->monotonic_ns(), p->realtime_ns()});
  pauses += c.pauses();
  paused_ns += c.paused_ns();
  filtered += c.filtered();
  return {};
}

// Blocks are applied in file order, each once, by load_tables when the trace is opened (the
// event stream then decompresses each block a second time, for its events).
result<void> trace_reader::impl::apply_block(size_t i, const fb::Block& b) {
  if (i != defs_through) return {};
  if (b.defs()) FSRR_TRY(apply_defs(i, *b.defs()));
  if (i == 0 && paths.size() <= root_path) return fail_block(i, "root path missing");
  if (b.tree()) FSRR_TRY(apply_tree(i, *b.tree()));
  if (b.counters()) FSRR_TRY(apply_counters(i, *b.counters()));
  ++defs_through;
  return {};
}

result<void> trace_reader::impl::load_tables() {
  std::vector<uint8_t> buf;
  while (defs_through < blocks.size()) {
    const auto b = load_block(defs_through, buf);
    if (!b) return tl::unexpected(b.error());
    FSRR_TRY(apply_block(defs_through, **b));
  }
  if (paths.size() <= root_path) paths.push_back({no_id, 0});  // a trace with no blocks: ""
  return {};
}

}  // namespace fsrr
