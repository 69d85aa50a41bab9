#include "data_flow.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "content_key.h"
#include "system_paths.h"

namespace fsrr {
namespace {

// What a thread may hold, unwritten, before the oldest goes: a program that reads and never
// writes (a configuration, a checksum) must not make the model grow.
constexpr size_t max_held_items = 4096;
constexpr uint64_t max_held_bytes = uint64_t{1} << 32;
// Pieces a write looks through for its copy's source.
constexpr size_t copy_lookahead = 256;
// In the pieces take_pair() hands write_file(): bytes to be made fresh where they land.
constexpr uint64_t fresh_key = zero_key - 1;

bool is_read(op k) {
  return k == op::read || k == op::pread64 || k == op::readv || k == op::preadv || k == op::preadv2;
}

bool is_write(op k) {
  return k == op::write || k == op::pwrite64 || k == op::writev || k == op::pwritev ||
         k == op::pwritev2;
}

uint64_t moved(const event& e) { return e.result > 0 ? static_cast<uint64_t>(e.result) : 0; }

}  // namespace

// ---- data_flow --------------------------------------------------------------------------

// Bytes a thread or a stream holds, unwritten: a piece read from a file or a device.
struct data_flow::held {
  bool fresh = false;     // bytes nobody can name (/dev/urandom): fresh where they land
  bool system = false;    // read from a system file (system_paths.h): likely configuration
  uint64_t read_no = 0;   // which read of its thread brought it
  file_id src = no_id;    // the file it was read from (no_id: a device)
  uint64_t src_at = 0;    // where in that file
  uint64_t src_size = 0;  // the file's size then
  source_piece data;      // its bytes (key, offset; length)
};

struct data_flow::thread_state {
  queue pending;  // what it read from files and devices
  uint64_t pending_bytes = 0;
  std::vector<file_id> streams;  // the pipes and sockets it reads, in the order first read
  uint64_t reads = 0;            // its reads so far
  uint64_t last_read = 0;        // if its last data op was a read: its number
  uint64_t last_read_bytes = 0;  // and what it returned
  file_id last_stream = no_id;   // and the stream it read, if it was one
};

struct data_flow::stream_state {
  queue q;
  uint64_t bytes = 0;
  bool written = false;  // a write into it is in the trace
};

data_flow::data_flow(trace_reader& trace, bool all_contents)
    : trace_(trace), all_contents_(all_contents) {
  const size_t files = trace.file_count() + 1;
  reaches_.assign(files, 0);
  initial_entry_.assign(files, 0);
  seen_.assign(files, false);
  read_.assign(files, false);
  const auto read_from = [&](file_id f) {
    if (f != no_id && f < files) read_[f] = true;
  };
  changed_.resize(files);
  const tree_table& tree = trace.tree();
  auto it = tree.begin();  // in order: each entry decoded once
  for (size_t i = 0; i < tree.size(); ++i, ++it) {
    const tree_entry t = *it;
    if (!S_ISREG(t.mode)) continue;
    const auto at = static_cast<uint32_t>(i + 1);
    if (t.file == no_id || t.file >= files) {  // known by its path until an open names it
      if (t.path >= by_path_.size()) by_path_.resize(t.path + 1, 0);
      by_path_[t.path] = at;
      continue;
    }
    initial_entry_[t.file] = at;
    reaches_[t.file] = std::max(reaches_[t.file], t.size);
  }
  // Damaged events end the scan here; the replay's own stream meets the damage and stops there.
  auto events = trace.events();
  for (event e; events.next(e);) {
    if (e.result < 0) continue;
    if (is_read(e.kind) || e.kind == op::copy_file_range || e.kind == op::splice)
      read_from(e.file);
    if (e.kind == op::sendfile || e.kind == op::ioctl) read_from(e.file2);
    uint64_t end = 0;
    file_id f = e.file;
    if (is_write(e.kind)) {
      end = static_cast<uint64_t>(std::max<int64_t>(e.offset, 0)) + moved(e);
    } else if (e.kind == op::ftruncate || e.kind == op::truncate) {
      end = e.size;
    } else if ((e.kind == op::copy_file_range || e.kind == op::splice) && e.offset2 >= 0) {
      end = static_cast<uint64_t>(e.offset2) + moved(e);
      f = e.file2;
    } else {
      continue;
    }
    if (f != no_id && f < files) reaches_[f] = std::max(reaches_[f], end);
  }
}

data_flow::~data_flow() = default;

// The first time an event names a file by a path: if the initial tree holds a file there that
// no event has named yet, that is the file (a listed directory's entries come without ids).
void data_flow::first_sight(file_id f, path_id p) {
  if (f == no_id || f >= seen_.size() || seen_[f]) return;
  seen_[f] = true;
  if (initial_entry_[f] || p >= by_path_.size() || !by_path_[p]) return;
  initial_entry_[f] = by_path_[p];
  by_path_[p] = 0;
  reaches_[f] = std::max(reaches_[f], trace_.tree()[initial_entry_[f] - 1].size);
}

std::optional<tree_entry> data_flow::initial_entry(file_id f) const {
  if (f >= initial_entry_.size() || !initial_entry_[f]) return std::nullopt;
  return trace_.tree()[initial_entry_[f] - 1];
}

const content_map* data_flow::content(file_id f) const {
  return f < changed_.size() ? changed_[f].get() : nullptr;
}

std::pair<uint64_t, uint64_t> data_flow::initial(file_id f) const {
  const std::optional<tree_entry> t = initial_entry(f);
  return t ? std::pair<uint64_t, uint64_t>{content_key(t->path), t->size}
           : std::pair<uint64_t, uint64_t>{0, 0};
}

content_map& data_flow::changed(file_id f) {
  if (f >= changed_.size()) changed_.resize(std::max<size_t>(f + 1, changed_.size() * 3 / 2));
  auto& slot = changed_[f];
  if (slot) return *slot;
  const std::optional<tree_entry> t = initial_entry(f);
  slot = std::make_unique<content_map>(t ? tree_content(*t) : content_map{});
  return *slot;
}

uint64_t data_flow::size_of(file_id f) const {
  if (const content_map* m = content(f)) return m->size();
  return initial(f).second;
}

void data_flow::pieces_of(file_id f, uint64_t at, uint64_t length, source_list& out) const {
  if (const content_map* m = content(f)) return m->read(at, length, out);
  const std::optional<tree_entry> t = initial_entry(f);
  if (!t || at >= t->size) return;
  if (t->extents.empty()) return out.add({content_key(t->path), at, std::min(length, t->size - at)});
  tree_content(*t).read(at, length, out);  // rare: a sparse file read before any change
}

data_flow::thread_state& data_flow::thread(thread_id t) {
  if (t >= threads_.size()) threads_.resize(t + 1);
  if (!threads_[t]) threads_[t] = std::make_unique<thread_state>();
  return *threads_[t];
}

data_flow::stream_state& data_flow::stream(file_id s) {
  auto& slot = streams_[s];
  if (!slot) slot = std::make_unique<stream_state>();
  return *slot;
}

// A path is the system's if its topmost component is one of system_paths.h's: worked out from
// its ancestors' answers (iteratively: paths may be thousands deep), without building it.
bool data_flow::system_file(path_id p) {
  if (p == no_id) return false;
  std::vector<path_id> chain;  // p and the ancestors below the first one answered
  path_id q = p;
  uint8_t answer = 1;
  for (;;) {
    if (q >= system_.size()) system_.resize(q + q / 2 + 64, 0);
    if (system_[q]) {
      answer = system_[q];
      break;
    }
    const path_entry& e = trace_.path(q);
    if (e.parent == no_id) {  // "/" or a root's top: not the system's itself
      system_[q] = 1;
      break;
    }
    chain.push_back(q);
    if (trace_.path(e.parent).parent == no_id) {  // a top's child: the first component
      answer = is_system_path(std::string("/").append(e.name)) ? 2 : 1;
      system_[q] = answer;
      chain.pop_back();
      break;
    }
    q = e.parent;
  }
  for (const path_id c : chain) system_[c] = answer;
  return system_[p] == 2;
}

void data_flow::push(queue& q, uint64_t& bytes, held h) {
  if (h.data.length == 0) return;
  bytes += h.data.length;
  q.push_back(h);
  while (q.size() > max_held_items || bytes > max_held_bytes) drop_front(q, bytes, 1);
}

void data_flow::drop_front(queue& q, uint64_t& bytes, size_t count) {
  for (size_t i = 0; i < count && !q.empty(); ++i) {
    stats_.dropped += q.front().data.length;
    bytes -= q.front().data.length;
    q.pop_front();
  }
}

void data_flow::read_file(thread_state& t, const event& e, file_id f, uint64_t at, path_id path) {
  const uint64_t n = moved(e);
  t.last_read = ++t.reads;
  t.last_read_bytes = n;
  t.last_stream = no_id;
  if (n == 0) return;
  source_list pieces;
  pieces_of(f, at, n, pieces);
  held h;
  h.read_no = t.last_read;
  h.system = system_file(path);
  h.src = f;
  h.src_size = size_of(f);
  h.src_at = at;
  for (const source_piece& p : pieces) {
    h.data = p;
    push(t.pending, t.pending_bytes, h);
    h.src_at += p.length;
  }
  if (h.src_at < at + n) {  // bytes the model cannot name (a file it does not know)
    h.fresh = true;
    h.data = {0, 0, at + n - h.src_at};
    push(t.pending, t.pending_bytes, h);
  }
}

void data_flow::read_stream(thread_state& t, const event& e) {
  const uint64_t n = moved(e);
  t.last_read = ++t.reads;
  t.last_read_bytes = n;
  t.last_stream = no_id;
  if (n == 0) return;
  const file_info& f = trace_.file(e.file);
  if (!S_ISCHR(f.type)) {  // a pipe or socket: its bytes are looked for there, when written
    t.last_stream = e.file;
    if (std::find(t.streams.begin(), t.streams.end(), e.file) == t.streams.end())
      t.streams.push_back(e.file);
    return;
  }
  stats_.device_bytes += n;
  held h;
  h.read_no = t.last_read;
  if (f.dev == makedev(1, 5))  // /dev/zero
    h.data = {zero_key, 0, n};
  else
    h.fresh = true, h.data.length = n;
  push(t.pending, t.pending_bytes, h);
}

void data_flow::write_stream(thread_state& t, const event& e) {
  const uint64_t n = moved(e);
  const file_info& f = trace_.file(e.file);
  (S_ISSOCK(f.type) ? stats_.socket_bytes : stats_.pipe_bytes) += n;
  stream_state& s = stream(e.file);
  s.written = true;
  while (!t.pending.empty()) {
    push(s.q, s.bytes, t.pending.front());
    t.pending.pop_front();
  }
  t.pending_bytes = 0;
  t.last_read = 0;
}

uint64_t data_flow::take(queue& q, uint64_t& bytes, uint64_t n, bool run, source_list& out) {
  uint64_t got = 0;
  const file_id src = q.empty() ? no_id : q.front().src;
  uint64_t src_at = q.empty() ? 0 : q.front().src_at;
  while (got < n && !q.empty()) {
    held& h = q.front();
    if (run && (h.fresh || h.src != src || h.src_at != src_at)) break;
    const uint64_t part = std::min(n - got, h.data.length);
    if (h.fresh) {
      out.add({fresh_key, 0, part});  // placeholder: made fresh where it lands
    } else {
      out.add({h.data.key, h.data.offset, part});
      (h.src == no_id && h.data.key == zero_key ? stats_.zeros : stats_.copied) += part;
    }
    got += part;
    src_at += part;
    bytes -= part;
    if (part == h.data.length) {
      q.pop_front();
    } else {
      if (h.data.key != zero_key) h.data.offset += part;
      h.src_at += part;
      h.data.length -= part;
    }
  }
  return got;
}

bool data_flow::take_copy(thread_state& t, file_id dest, uint64_t at, uint64_t n,
                          source_list& out) {
  const uint64_t reaches = dest < reaches_.size() ? reaches_[dest] : 0;
  auto copy_source = [&](const held& h) {
    return !h.fresh && h.src != no_id && h.src != dest && h.src_at == at && h.src_size == reaches;
  };
  auto from = [&](queue& q, uint64_t& bytes) {
    const size_t look = std::min(q.size(), copy_lookahead);
    for (size_t i = 0; i < look; ++i) {
      if (!copy_source(q[i])) continue;
      drop_front(q, bytes, i);  // what came before: read, and not what is copied here
      take(q, bytes, n, true, out);
      return true;
    }
    return false;
  };
  if (from(t.pending, t.pending_bytes)) return true;
  for (const file_id s : t.streams) {
    stream_state& st = stream(s);
    if (from(st.q, st.bytes)) return true;
  }
  return false;
}

bool data_flow::take_pair(thread_state& t, uint64_t n, source_list& out) {
  if (!t.last_read || t.last_read_bytes != n) return false;
  if (t.last_stream != no_id) {  // from a pipe: its writer's configuration first
    stream_state& s = stream(t.last_stream);
    size_t skip = 0;
    while (skip < s.q.size() && s.q[skip].system) ++skip;
    if (skip == s.q.size()) return false;
    drop_front(s.q, s.bytes, skip);
    return take(s.q, s.bytes, n, false, out) > 0;
  }
  size_t first = t.pending.size();
  while (first > 0 && t.pending[first - 1].read_no == t.last_read) --first;
  if (first == t.pending.size()) return false;
  // the read's bytes are the last held: take them from the back, as they came
  queue tail(t.pending.begin() + static_cast<ptrdiff_t>(first), t.pending.end());
  t.pending.erase(t.pending.begin() + static_cast<ptrdiff_t>(first), t.pending.end());
  uint64_t tail_bytes = 0;
  for (const held& h : tail) tail_bytes += h.data.length;
  t.pending_bytes -= tail_bytes;
  take(tail, tail_bytes, n, false, out);
  return true;
}

// Bytes read from a user's file are held (what is read of the system's files and of
// /dev/urandom may well be written nowhere, or be fresh where it is).
bool data_flow::holds_data(const queue& q) {
  const size_t look = std::min(q.size(), copy_lookahead);
  for (size_t i = 0; i < look; ++i)
    if (!q[i].fresh && !q[i].system) return true;
  return false;
}

void data_flow::write_file(thread_state& t, const event& e, uint64_t key, source_list& out) {
  const uint64_t n = moved(e);
  const uint64_t at = static_cast<uint64_t>(std::max<int64_t>(e.offset, 0));
  out.clear();
  const file_id orphan = t.last_stream;
  if (n == 0) {
    t.last_read = 0;
    return;
  }
  source_list taken;
  const bool matched = take_copy(t, e.file, at, n, taken) || take_pair(t, n, taken);
  t.last_read = 0;
  // Fresh bytes (placeholders, and what no source covered) are the handle's at the file
  // offset they land on, as every fresh write's are.
  uint64_t pos = 0;
  for (const source_piece& p : taken) {
    if (p.key == fresh_key) {
      out.add({key, at + pos, p.length});
      stats_.generated += p.length;
    } else {
      out.add(p);
    }
    pos += p.length;
  }
  if (pos < n) {
    out.add({key, at + pos, n - pos});
    const auto s = orphan ? streams_.find(orphan) : streams_.end();
    if (orphan != no_id && (s == streams_.end() || !s->second->written))
      stats_.unmatched_no_writer += n - pos;
    else if (!matched && (holds_data(t.pending) || (s != streams_.end() && holds_data(s->second->q))))
      stats_.unmatched_sizes += n - pos;
    else
      stats_.generated += n - pos;
  }
  if (tracked(e.file)) changed(e.file).write(at, out);
}

void data_flow::copy_in_kernel(file_id from, uint64_t from_at, file_id to, uint64_t to_at,
                               uint64_t n) {
  if (n == 0 || to == no_id) return;
  stats_.in_kernel += n;
  if (!tracked(to)) return;
  source_list pieces;
  pieces_of(from, from_at, n, pieces);
  if (pieces.bytes() < n) pieces.add({zero_key, 0, n - pieces.bytes()});  // unknown: zeros
  changed(to).write(to_at, pieces);
}

void data_flow::apply(const event& e, const fd_effect& fx, const fd_map& fds, source_list* out) {
  if (out) out->clear();
  if (e.result < 0) return;
  const op k = e.kind;
  if (k == op::exit) {
    if (e.thread < threads_.size() && threads_[e.thread]) {
      stats_.dropped += threads_[e.thread]->pending_bytes;  // read, never written
      threads_[e.thread].reset();
    }
    return;
  }
  const uint64_t n = moved(e);
  if (k == op::stream_read) return read_stream(thread(e.thread), e);
  if (k == op::stream_write) return write_stream(thread(e.thread), e);
  if (is_read(k)) {
    const path_id path = fx.h1 ? fds.handle(fx.h1).path : no_id;
    return read_file(thread(e.thread), e, e.file, static_cast<uint64_t>(e.offset), path);
  }
  if (is_write(k)) {
    const handle_id h = fx.h1;
    const uint64_t key = h ? content_key(fds.handle(h).path) : 0;
    source_list scratch;
    write_file(thread(e.thread), e, key, out ? *out : scratch);
    return;
  }
  switch (k) {
    case op::fd_bind:
      return first_sight(e.file, e.path);
    case op::open:
    case op::openat:
    case op::openat2:
    case op::creat:
      first_sight(e.file, e.path);
      if ((k == op::creat || (e.flags & O_TRUNC)) && tracked(e.file) && size_of(e.file) > 0)
        changed(e.file).resize(0);
      return;
    case op::copy_file_range: {  // fd: in, fd2: out; -1: at (and past) the fd's position
      const uint64_t in = fx.pos1 ? (fx.h1 ? fds.handle(fx.h1).pos - n : 0)
                                  : static_cast<uint64_t>(e.offset);
      const uint64_t to = fx.pos2 ? (fx.h2 ? fds.handle(fx.h2).pos - n : 0)
                                  : static_cast<uint64_t>(e.offset2);
      return copy_in_kernel(e.file, in, e.file2, to, n);
    }
    case op::splice:  // a pipe on one side, not followed: the file's side is read or written
      if (e.file2 != no_id && e.file == no_id && fx.h2) {  // into the file: fresh bytes there
        const int64_t pos = fds.handle(fx.h2).pos;  // (a hostile trace's may be negative)
        const int64_t at = fx.pos2 ? (pos > 0 && static_cast<uint64_t>(pos) >= n
                                          ? pos - static_cast<int64_t>(n) : 0)
                                   : std::max<int64_t>(e.offset2, 0);
        const auto to = static_cast<uint64_t>(at);
        if (to > UINT64_MAX - n) return;
        source_list fresh;
        if (n) fresh.add({content_key(fds.handle(fx.h2).path), to, n});
        stats_.generated += n;
        if (tracked(e.file2)) changed(e.file2).write(to, fresh);
        if (out) *out = std::move(fresh);
      }
      return;
    case op::sendfile: {  // fd: out at its position, fd2: in
      const uint64_t to = fx.h1 ? fds.handle(fx.h1).pos - n : 0;
      const uint64_t in = fx.pos2 ? (fx.h2 ? fds.handle(fx.h2).pos - n : 0)
                                  : static_cast<uint64_t>(e.offset);
      return copy_in_kernel(e.file2, in, e.file, to, n);
    }
    case op::ioctl:
      if (e.aux == FICLONE && e.file2 != no_id && e.file != no_id) {
        const uint64_t size = size_of(e.file2);
        if (tracked(e.file)) changed(e.file).resize(0);
        copy_in_kernel(e.file2, 0, e.file, 0, size);
      } else if (e.aux == FICLONERANGE && e.file2 != no_id && e.file != no_id) {
        const uint64_t from = static_cast<uint64_t>(e.offset);
        const uint64_t size = size_of(e.file2);
        const uint64_t len = e.size ? e.size : (size > from ? size - from : 0);
        copy_in_kernel(e.file2, from, e.file, static_cast<uint64_t>(e.offset2), len);
      }
      return;
    case op::ftruncate:
    case op::truncate:
      if (tracked(e.file)) changed(e.file).resize(e.size);
      return;
    case op::fallocate: {
      if (!tracked(e.file)) return;
      const uint64_t at = static_cast<uint64_t>(e.offset);
      content_map& m = changed(e.file);
      if (e.flags & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) m.zero(at, e.size);
      if (!(e.flags & (FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE)) && at + e.size > m.size() &&
          !(e.flags & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE)))
        m.resize(at + e.size);
      return;
    }
    default:
      return;
  }
}

}  // namespace fsrr

namespace fsrr {

result<flow_stats> trace_flow(trace_reader& trace) {
  std::vector<thread_info> threads(trace.thread_count() + 1);
  for (thread_id t = 1; t < threads.size(); ++t) threads[t] = trace.thread(t);
  fd_map fds(std::move(threads));
  data_flow flow(trace, false);
  fd_effect fx;
  auto events = trace.events();
  for (event e; events.next(e);) {
    fds.apply(e, fx);
    flow.apply(e, fx, fds);
    for (const handle_id h : fx.released) fds.recycle(h);
  }
  FSRR_TRY(events.status());
  return flow.stats();
}

}  // namespace fsrr
