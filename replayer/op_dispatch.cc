#include "op_dispatch.h"
#include "syscall_result.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cpu_spread.h"
#include "prepare.h"
#include "schedule.h"

namespace fsrr {
namespace {

constexpr size_t sink_bytes = size_t{256} << 20;    // reserved, touched only as far as used
constexpr size_t max_io_bytes = size_t{256} << 20;  // larger single calls are cut (and differ)

std::span<uint8_t> map_buffer(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return {};
  return {static_cast<uint8_t*>(p), bytes};
}

// Splits [buf, buf+n) into `count` iovecs as a vectored call would (the trace keeps the total).
int make_iov(uint8_t* buf, size_t n, uint64_t count, iovec* iov) {
  const size_t cnt = std::clamp<uint64_t>(count, 1, IOV_MAX);
  const size_t each = n / cnt;
  for (size_t i = 0; i < cnt; ++i)
    iov[i] = {buf + i * each, i + 1 == cnt ? n - each * (cnt - 1) : each};
  return static_cast<int>(cnt);
}

}  // namespace

bool is_count_result(op k) {
  switch (info(k).cls) {
    case op_class::read:
    case op_class::write:
    case op_class::seek:
    case op_class::copy:
    case op_class::dir:
      return true;
    default:
      return k == op::readlink || k == op::readlinkat || k == op::getxattr || k == op::lgetxattr ||
             k == op::fgetxattr || k == op::listxattr || k == op::llistxattr ||
             k == op::flistxattr || k == op::getxattrat || k == op::listxattrat;
  }
}

namespace {

// The placed trace path of `p` (trace_reader::placed_path) without its leading "/" for "/"
// itself. A top's `last` is empty, or with several roots its root's "rootN".
void append_trace_path(const resolved_path& p, std::string& out) {
  std::vector<const resolved_path*> chain;  // leaf first: no recursion, whatever the depth
  for (const resolved_path* q = &p; q; q = q->up) chain.push_back(q);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if ((*it)->up || !(*it)->last.empty()) {
      out += '/';
      out += (*it)->last;
    }
}

}  // namespace

std::string resolved_path::trace_path() const {
  std::string s;
  append_trace_path(*this, s);
  return s.empty() ? "/" : s;
}

path_cache::path_cache(trace_reader& reader, const target_root& target, size_t generation)
    : reader_(reader),
      target_(target),
      generation_(std::max<size_t>(generation, 1)),
      index_(reader.path_count() + 1),
      current_(std::make_unique<struct generation>()) {}

path_cache::~path_cache() = default;

const resolved_path* path_cache::get(path_id id) {
  if (id == no_id || id >= index_.size()) return nullptr;
  if (current(index_[id])) return index_[id];
  // Ancestors first, from the nearest current one: no recursion, whatever the depth.
  std::vector<path_id> chain;
  for (path_id q = reader_.path(id).parent; q != no_id && q < index_.size() && !current(index_[q]);
       q = reader_.path(q).parent)
    chain.push_back(q);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) resolve(*it);
  return resolve(id);
}

void path_cache::retire(std::vector<dependency> until) {
  current_->until = std::move(until);
  const uint32_t next = current_->number + 1;
  retired_.push_back(std::move(current_));
  current_ = std::make_unique<generation>();
  current_->number = next;
  collect();
}

void path_cache::collect() {
  // Oldest first: a generation's ops were queued before a later one's.
  while (!retired_.empty() &&
         std::all_of(retired_.front()->until.begin(), retired_.front()->until.end(),
                     [](const dependency& d) { return d.lane->reached(d.count); })) {
    free(*retired_.front());
    retired_.pop_front();
  }
}

void path_cache::drop_retired() {
  for (auto& g : retired_) free(*g);
  retired_.clear();
}

void path_cache::free(generation& g) {
  for (const resolved_path& p : g.entries)
    if (index_[p.id] == &p) index_[p.id] = nullptr;
}

size_t path_cache::live_entries() const {
  size_t n = current_->entries.size();
  for (const auto& g : retired_) n += g->entries.size();
  return n;
}

const resolved_path* path_cache::resolve(path_id id) {
  if (current(index_[id])) return index_[id];
  const path_entry& entry = reader_.path(id);
  const bool top = entry.parent == no_id;
  const resolved_path* up = top || entry.parent >= index_.size() ? nullptr : index_[entry.parent];
  resolved_path& p = current_->entries.emplace_back();
  p.gen = current_->number;
  p.id = id;
  p.parent = entry.parent;
  p.up = up;
  p.last = entry.name;
  if (top && id == root_path && reader_.roots().size() > 1) p.last = "root1";
  scratch_.clear();
  if (top && !p.last.empty()) {
    scratch_ = '/';
    scratch_ += p.last;
  } else if (up) {
    auto cached = std::find_if(parents_.begin(), parents_.end(),
                               [&](const parent_path& c) { return c.id == entry.parent; });
    if (cached == parents_.end()) {
      cached = parents_.begin() + next_parent_++ % parents_.size();
      cached->id = entry.parent;
      cached->path.clear();
      append_trace_path(*up, cached->path);
    }
    scratch_ = cached->path;
    scratch_ += '/';
    scratch_ += entry.name;
  }
  if (auto at = target_.locate(scratch_.empty() ? "/" : scratch_)) {
    p.ok = true;
    p.at = std::move(*at);
    const size_t slash = p.at.rel.rfind('/');
    p.name_at = slash == std::string::npos ? 0 : slash + 1;
  }
  index_[id] = &p;
  return &p;
}

handle_table::handle_table() : chunks_(new std::atomic<handle_slot*>[max_chunks]) {
  for (size_t i = 0; i < max_chunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

handle_table::~handle_table() {
  for (size_t i = 0; i < made_; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

void handle_table::ensure(size_t count) {
  while (made_ * chunk_size < count && made_ < max_chunks)
    chunks_[made_++].store(new handle_slot[chunk_size], std::memory_order_release);
}

void handle_table::close_all() {
  for (size_t c = 0; c < made_; ++c) {
    handle_slot* s = chunks_[c].load(std::memory_order_relaxed);
    for (size_t i = 0; i < chunk_size; ++i)
      if (s[i].fd >= 0) {
        ::close(s[i].fd);
        s[i].fd = -1;
      }
  }
}

replay_shared::replay_shared(const target_root& t, const data_source& d) : target(t), data(d) {
  zero_data = d.spec().kind == data_kind::zero && d.spec().dedupe_pct == 0;
  sink = map_buffer(sink_bytes);
}

replay_shared::~replay_shared() {
  if (!sink.empty()) ::munmap(sink.data(), sink.size());
}

void replay_shared::request_stop(const std::string& why) {
  std::lock_guard lock(mu_);
  if (reason_.empty()) reason_ = why;
  stop.store(true, std::memory_order_release);
}

std::string replay_shared::stop_reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

op_runner::op_runner(replay_shared& shared, replay_stats& stats, int32_t tid)
    : s_(shared), stats_(stats), tid_(tid) {}

op_runner::~op_runner() {
  for (auto& d : dirs_)
    if (d.fd >= 0) ::close(d.fd);
  if (wbuf_) ::munmap(wbuf_, wbuf_size_);
}

int op_runner::fd_of(handle_id h) const {
  return h ? s_.handles[h].fd : -1;
}

int op_runner::dir_fd(const resolved_path* p) {
  if (!p || !p->ok) return -EXDEV;
  if (p->is_root()) return -EBUSY;  // a root itself: there is no name to act on
  const uint64_t gen = s_.namespace_gen.load(std::memory_order_acquire);
  cached_dir& c = dirs_[p->parent % dir_cache_size];
  if (c.fd >= 0 && c.id == p->parent && c.gen == gen) return c.fd;
  if (c.fd >= 0) ::close(c.fd);
  c = {};
  const int fd = s_.target.open(p->dir(), O_PATH | O_DIRECTORY);
  if (fd >= 0) c = {p->parent, gen, fd};
  return fd;
}

int op_runner::enter_dir(const resolved_path* p) {
  const uint64_t gen = s_.namespace_gen.load(std::memory_order_acquire);
  if (cwd_ == p->parent && cwd_gen_ == gen) return 0;
  const int d = dir_fd(p);
  if (d < 0) return d;
  if (::fchdir(d) != 0) return -errno;
  cwd_ = p->parent;
  cwd_gen_ = gen;
  return 0;
}

int op_runner::open_path(const resolved_path* p, int flags) {
  if (!p || !p->ok) return -EXDEV;
  return s_.target.open(p->at, flags);
}

std::span<uint8_t> op_runner::buffer(uint64_t size) {
  const size_t n = std::min<uint64_t>(size, max_io_bytes);
  if (n > wbuf_size_) {
    if (wbuf_) ::munmap(wbuf_, wbuf_size_);
    const size_t want = std::max<size_t>((n + 0xFFFFF) & ~size_t{0xFFFFF}, size_t{1} << 20);
    auto b = map_buffer(want);
    wbuf_ = b.data();
    wbuf_size_ = b.size();
    if (!wbuf_) return {};
  }
  return {wbuf_, n};
}

std::span<uint8_t> op_runner::fill(uint64_t key, uint64_t offset, uint64_t size) {
  const std::span<uint8_t> out = buffer(size);
  if (!s_.zero_data) s_.data.fill(key, offset, out);
  return out;
}

std::span<uint8_t> op_runner::fill(const source_list& sources, uint64_t key, uint64_t offset,
                                   uint64_t size) {
  if (sources.empty()) return fill(key, offset, size);
  const std::span<uint8_t> out = buffer(size);
  if (s_.zero_data) return out;  // never filled: zeros all along
  size_t pos = 0;
  for (const source_piece& p : sources) {
    if (pos == out.size()) break;
    const auto part = out.subspan(pos, std::min<uint64_t>(p.length, out.size() - pos));
    if (p.key == zero_key)
      std::memset(part.data(), 0, part.size());
    else
      s_.data.fill(p.key, p.offset, part);
    pos += part.size();
  }
  if (pos < out.size()) s_.data.fill(key, offset + pos, out.subspan(pos));
  return out;
}

int64_t op_runner::open_file(const work_item& w) {
  const event& e = w.ev;
  int flags = e.kind == op::creat ? O_CREAT | O_WRONLY | O_TRUNC : static_cast<int>(e.flags);
  flags &= ~O_CLOEXEC;  // replay fds are always close-on-exec; the recorded bit is in fd_map
  // Never wait in open(2) for a peer the replay won't start: whatever the trace says the file
  // is, the target may hold a FIFO there. O_NONBLOCK changes nothing else for the files a
  // replay opens (regular files, directories); F_GETFL answers without it.
  // (openat2 refuses O_PATH with any flag beyond O_DIRECTORY and O_NOFOLLOW)
  const int open_flags = flags & O_PATH ? flags : flags | O_NONBLOCK;
  uint64_t resolve = 0;
  if (e.kind == op::openat2)  // the path is already resolved; confinement adds BENEATH itself
    resolve = e.aux & (RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  int fd = -EXDEV;
  if (w.p1 && w.p1->ok) {
    // The same syscall as recorded, on the confined parent directory and one name that is
    // not followed if it is a symlink; a symlink the recorded open did follow is then
    // followed confined by openat2. O_PATH without O_NOFOLLOW would open the link itself.
    const bool direct =
        e.kind != op::openat2 && !w.p1->is_root() && (!(flags & O_PATH) || (flags & O_NOFOLLOW));
    const int d = direct ? dir_fd(w.p1) : -EXDEV;
    if (d >= 0) {
      fd = ::openat(d, w.p1->name(), open_flags | O_NOFOLLOW | O_CLOEXEC, mode_of(e));
      if (fd < 0) fd = -errno;
    }
    if (d < 0 || (fd == -ELOOP && !(flags & O_NOFOLLOW)))
      fd = s_.target.open(w.p1->at, open_flags, mode_of(e), resolve);
  }
  if (fd >= 0 && ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)))) ++stats_.files;
  if (!w.fx.opened) {
    if (fd >= 0) ::close(fd);  // the recorded open failed: nothing will use it
    return fd;
  }
  handle_slot& h = s_.handles[w.fx.h1];
  h = {fd, static_cast<uint32_t>(flags), content_key(e.path), e.path};
  return fd;
}

int64_t op_runner::bind_fd(const work_item& w) {
  const event& e = w.ev;
  const int flags = static_cast<int>(e.flags) & ~(O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC);
  int fd = open_path(w.p1, flags & O_PATH ? flags : flags | O_NONBLOCK);  // as open_file
  if (fd >= 0 && S_ISDIR(w.ftype) && e.aux) {
    // a slice's start: its listing as far as it had gone (to the end, or that many bytes)
    uint64_t listed = 0;
    while (e.aux == ~uint64_t{0} || listed + 1 < e.aux) {
      const long n = ::syscall(SYS_getdents64, fd, s_.sink.data(), std::min<size_t>(s_.sink.size(), 32768));
      if (n <= 0) break;
      listed += static_cast<uint64_t>(n);
    }
  } else if (fd >= 0 && e.offset > 0 && !(flags & O_APPEND) &&
             ::lseek(fd, e.offset, SEEK_SET) < 0) {
    ::close(fd);
    fd = -errno;
  }
  s_.handles[w.fx.h1] = {fd, static_cast<uint32_t>(flags), content_key(e.path), e.path};
  return fd < 0 ? fd : 0;
}

int64_t op_runner::close_fd(const work_item& w) {
  if (!w.fx.h1) return sys(::close(-1));  // not open in the recording either: EBADF, as recorded
  if (std::find(w.fx.released.begin(), w.fx.released.end(), w.fx.h1) == w.fx.released.end()) {
    // Another recorded fd still refers to the open file, and one replay fd stands for both:
    // closing a copy of it drops a reference as the recorded close did, and the file stays open.
    const int fd = fd_of(w.fx.h1);
    if (fd < 0) return 0;
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    return copy < 0 ? -errno : sys(::close(copy));
  }
  handle_slot& h = s_.handles[w.fx.h1];
  if (h.fd < 0) return -EBADF;
  if (requests_) requests_->forget_fd(h.fd);
  const int64_t r = sys(::close(h.fd));
  h.fd = -1;
  return r;
}

int64_t op_runner::read_data(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  if (fd < 0) return -EBADF;
  const size_t n = std::min<uint64_t>(e.size, std::min(max_io_bytes, s_.sink.size()));
  uint8_t* buf = s_.sink.data();
  iovec iov[IOV_MAX];
  int64_t r;
  switch (e.kind) {
    case op::read:
      r = sys(::read(fd, buf, n));
      break;
    case op::pread64:
      r = sys(::pread(fd, buf, n, e.offset));
      break;
    case op::readv:
      r = sys(::readv(fd, iov, make_iov(buf, n, e.aux, iov)));
      break;
    case op::preadv:
      r = sys(::preadv(fd, iov, make_iov(buf, n, e.aux, iov), e.offset));
      break;
    default:  // preadv2
      r = sys(
          ::preadv2(fd, iov, make_iov(buf, n, e.aux, iov), e.offset, static_cast<int>(e.flags)));
      break;
  }
  if (r > 0) stats_.bytes_read += static_cast<uint64_t>(r);
  return r;
}

int64_t op_runner::write_data(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  if (fd < 0) return -EBADF;
  const auto buf = fill(w.sources, s_.handles[w.fx.h1].key, static_cast<uint64_t>(e.offset), e.size);
  if (buf.size() < std::min<uint64_t>(e.size, max_io_bytes)) return -ENOMEM;
  iovec iov[IOV_MAX];
  int64_t r;
  if (engine_of(e.via) == engine::mapped && s_.mmap_as_write)
    ++stats_.engines[static_cast<size_t>(engine::mapped)].as_syscalls;
  if (e.kind == op::pwrite64 && engine_of(e.via) == engine::mapped && !s_.mmap_as_write) {
    r = mapped_store(w, fd, buf);
    if (r > 0) stats_.bytes_written += static_cast<uint64_t>(r);
    return r;
  }
  switch (e.kind) {
    case op::write:
      r = sys(::write(fd, buf.data(), buf.size()));
      break;
    case op::pwrite64:
      r = sys(::pwrite(fd, buf.data(), buf.size(), e.offset));
      break;
    case op::writev:
      r = sys(::writev(fd, iov, make_iov(buf.data(), buf.size(), e.aux, iov)));
      break;
    case op::pwritev:
      r = sys(::pwritev(fd, iov, make_iov(buf.data(), buf.size(), e.aux, iov), e.offset));
      break;
    default:  // pwritev2
      r = sys(::pwritev2(fd, iov, make_iov(buf.data(), buf.size(), e.aux, iov), e.offset,
                         static_cast<int>(e.flags)));
      break;
  }
  if (r > 0) stats_.bytes_written += static_cast<uint64_t>(r);
  return r;
}

int64_t op_runner::copy_data(const work_item& w) {
  const event& e = w.ev;
  const int fd1 = fd_of(w.fx.h1), fd2 = fd_of(w.fx.h2);
  if (fd1 < 0 || fd2 < 0) return -EBADF;
  int64_t r;
  if (e.kind == op::copy_file_range) {  // fd: in, fd2: out
    loff_t in = e.offset, out = e.offset2;
    r = sys(::copy_file_range(fd1, w.fx.pos1 ? nullptr : &in, fd2, w.fx.pos2 ? nullptr : &out,
                              e.size, e.flags));
  } else {  // sendfile: fd: out, fd2: in
    off_t in = e.offset;
    r = sys(::sendfile(fd1, fd2, w.fx.pos2 ? nullptr : &in, e.size));
  }
  if (r > 0) {
    stats_.bytes_read += static_cast<uint64_t>(r);
    stats_.bytes_written += static_cast<uint64_t>(r);
  }
  return r;
}

int64_t op_runner::ioctl_op(const work_item& w) {
  const event& e = w.ev;
  if (e.aux != FICLONE && e.aux != FICLONERANGE) return not_issued;
  const int dst = fd_of(w.fx.h1), src = fd_of(w.fx.h2);
  if (dst < 0 || src < 0) return -EBADF;
  if (e.aux == FICLONE) return sys(::ioctl(dst, FICLONE, src));
  file_clone_range range{src, static_cast<uint64_t>(e.offset), e.size,
                         static_cast<uint64_t>(e.offset2)};
  return sys(::ioctl(dst, FICLONERANGE, &range));
}

int64_t op_runner::fcntl_op(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  switch (e.aux) {
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
    case F_SETFD:  // fd-table state, settled by the dispatcher
      return fd < 0 ? -EBADF : e.result;
    case F_GETFD:
      return fd < 0 ? -EBADF : sys(::fcntl(fd, F_GETFD));
    case F_GETFL: {  // without the O_NONBLOCK the replay's open added (open_file)
      if (fd < 0) return -EBADF;
      const int64_t r = sys(::fcntl(fd, F_GETFL));
      return r < 0 || (s_.handles[w.fx.h1].flags & O_NONBLOCK) ? r : r & ~int64_t{O_NONBLOCK};
    }
    case F_SETFL:
      return fd < 0 ? -EBADF : sys(::fcntl(fd, F_SETFL, static_cast<int>(e.flags)));
    default:  // locks, leases, pipe sizes: their argument is not in the trace
      return not_issued;
  }
}

int64_t op_runner::flock_op(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  if (fd < 0) return -EBADF;
  // Never block: a lock held by a thread that is behind would stall this one forever.
  const int how = static_cast<int>(e.flags) | LOCK_NB;
  int64_t r = sys(::flock(fd, how));
  if (r == -EWOULDBLOCK && !(e.flags & LOCK_NB) && e.result == 0) {
    const uint64_t give_up = monotonic_ns() + 10'000'000'000ull;
    cpu_seat::leave();  // it sleeps between tries
    while (r == -EWOULDBLOCK && monotonic_ns() < give_up && !s_.stop.load()) {
      ::usleep(1000);
      r = sys(::flock(fd, how));
    }
  }
  return r;
}

// The fd-only metadata and hint calls.
int64_t op_runner::fd_meta(const work_item& w) {
  const event& e = w.ev;
  const int fd = fd_of(w.fx.h1);
  if (fd < 0) return -EBADF;
  switch (e.kind) {
    case op::lseek: {
      handle_slot& h = s_.handles[w.fx.h1];
      h.listed_recorded = h.listed_replayed = 0;  // a listing read again starts afresh
      return sys(::lseek(fd, e.offset, static_cast<int>(e.aux)));
    }
    case op::fadvise64:
      return -::posix_fadvise(fd, e.offset, static_cast<off_t>(e.size), static_cast<int>(e.flags));
    case op::readahead:
      return sys(::readahead(fd, e.offset, e.size));
    case op::getdents:
    case op::getdents64: {
      const size_t n = std::min<uint64_t>(e.size, s_.sink.size());
#ifdef SYS_getdents
      if (e.kind == op::getdents) return sys(::syscall(SYS_getdents, fd, s_.sink.data(), n));
#endif
      return sys(::syscall(SYS_getdents64, fd, s_.sink.data(), n));
    }
    case op::fsync:
      return sys(::fsync(fd));
    case op::fdatasync:
      return sys(::fdatasync(fd));
    case op::sync_file_range:
      return sys(::sync_file_range(fd, e.offset, static_cast<off_t>(e.size), e.flags));
    case op::syncfs:
      return sys(::syncfs(fd));
    case op::ftruncate:
      return sys(::ftruncate(fd, static_cast<off_t>(e.size)));
    case op::fallocate:
      return sys(::fallocate(fd, static_cast<int>(e.flags), e.offset, static_cast<off_t>(e.size)));
    case op::fstat: {
      struct stat st;
      return sys(::fstat(fd, &st));
    }
    case op::fstatfs: {
      struct statfs sf;
      return sys(::fstatfs(fd, &sf));
    }
    default:
      return not_issued;
  }
}

int64_t op_runner::issue(const work_item& w) {
  const event& e = w.ev;
  switch (info(e.kind).cls) {
    case op_class::open:
      return open_file(w);
    case op_class::close:
      return close_fd(w);
    case op_class::read:
      return read_data(w);
    case op_class::write:
      return write_data(w);
    case op_class::copy:
      return e.kind == op::splice ? not_issued : copy_data(w);
    case op_class::ioctl:
      return ioctl_op(w);
    case op_class::seek:
    case op_class::dir:
      return fd_meta(w);
    case op_class::hint:
      return e.kind == op::flock ? flock_op(w) : fd_meta(w);
    case op_class::sync:
      if (e.kind == op::sync) {
        ::sync();
        return 0;
      }
      return fd_meta(w);
    case op_class::resize:
      return e.kind == op::truncate ? truncate_path(w) : fd_meta(w);
    case op_class::name:
      return name_op(w);
    case op_class::meta:
      return meta_op(w);
    case op_class::attr:
      return attr_op(w);
    case op_class::xattr:
      return xattr_op(w);
    case op_class::fd_table:
      if (e.kind == op::fd_bind) return bind_fd(w);
      if (e.kind == op::fcntl) return fcntl_op(w);
      return e.result;  // dup family, close_range: settled by the dispatcher
    case op_class::process:
    case op_class::unreplayable:
    case op_class::stream:
      return not_issued;
  }
  return not_issued;
}

void op_runner::count(const work_item& w, int64_t replayed, uint64_t latency_ns) {
  const event& e = w.ev;
  const size_t k = static_cast<size_t>(e.kind);
  ++stats_.events;
  if (replayed == not_issued) {
    if (info(e.kind).cls == op_class::unreplayable)
      ++stats_.unreplayable[k];
    else
      ++stats_.skipped[k];
    return;
  }
  op_stats& o = stats_.ops[k];
  ++o.count;
  o.latency.record(latency_ns);
  o.recorded.record(e.dur);
  if (replayed < 0) {
    ++o.errors;
    ++o.errnos[static_cast<int>(-replayed)];
  }
  if (difference_) {  // the environment's doing, either side: never a mismatch
    ++o.differences;
    ++stats_.differences;
    ++stats_.by_cause[static_cast<size_t>(cause_)];
    return;
  }
  if (!listing_differs_ && result_matches(e.kind, e.result, replayed)) return;
  ++o.mismatches;
  ++stats_.mismatches;
  std::string where;
  if (w.p1)
    where = w.p1->trace_path();
  else if (w.fx.h1 && s_.handles[w.fx.h1].path != no_id && s_.trace)
    where = s_.trace->placed_path(s_.handles[w.fx.h1].path);
  else
    where = fmt::format("fd {}", e.fd);
  if (stats_.first_mismatches.size() < s_.listed_mismatches)
    stats_.first_mismatches.push_back({w.seq, tid_, e.kind, where, e.result, replayed});
  if (replayed == -ENOSPC || replayed == -EDQUOT || replayed == -EIO)
    s_.request_stop(
        fmt::format("{} on the target: {} {}", strerrorname_np(-replayed), name(e.kind), where));
  else if (s_.strict)
    s_.request_stop(fmt::format("--strict: {} {} returned {} where the recording had {}",
                                name(e.kind), where, replayed, e.result));
}

// A recorded failure of the recording's environment is taken, not reproduced (unless
// --issue-all, which only tells it apart when the target took the other path); a failure of
// the target's environment where the recording succeeded gets the recorded effect another way.
uint64_t op_runner::run(const work_item& w) {
  const event& e = w.ev;
  if (requests_) before_op(w);
  difference_ = false;
  listing_differs_ = false;
  const bool recorded_env = e.result < 0 && env_cause_of(e, e.result, cause_);
  const uint64_t t0 = ticks_.now();
  const uint64_t read0 = stats_.bytes_read, written0 = stats_.bytes_written;
  int64_t r;
  if (recorded_env && !s_.issue_all) {
    r = e.result;
    difference_ = true;
  } else if (withheld(w)) {
    r = e.result;
    difference_ = true;
    cause_ = env_cause::privileged;
  } else if (has(e.kind, F_VIA) && submit_request(w)) {
    return ticks_.to_ns(ticks_.now() - t0);  // counted as it completes (request_done)
  } else {
    r = issue(w);
    if (r != not_issued && r < 0 && e.result >= 0 && env_cause_of(e, r, cause_)) {
      r = produce_effect(w, r, cause_);
      difference_ = true;
    } else if (recorded_env && r != not_issued && r != e.result) {
      difference_ = true;  // --issue-all: the target took the other path
    } else if ((e.kind == op::getdents || e.kind == op::getdents64) && w.fx.h1) {
      check_listing(w, r);
    }
  }
  const uint64_t took = ticks_.to_ns(ticks_.now() - t0);
  count(w, r, took);
  if (r != not_issued)
    note_time(t0, stats_.bytes_read - read0, stats_.bytes_written - written0);
  return took;
}

void op_runner::check_listing(const work_item& w, int64_t replayed) {
  const event& e = w.ev;
  if (e.result < 0 || replayed < 0) return;  // an error: compared as any other
  handle_slot& h = s_.handles[w.fx.h1];
  h.listed_recorded += static_cast<uint64_t>(e.result);
  h.listed_replayed += static_cast<uint64_t>(replayed);
  if (e.result > 0) {
    if (replayed != e.result) {
      difference_ = true;
      cause_ = env_cause::listing_split;
    }
  } else if (h.listed_replayed != h.listed_recorded) {
    listing_differs_ = true;  // the recorded end of the listing: other entries, or more
  } else if (replayed != 0) {
    difference_ = true;  // the replay's portions ended one call later
    cause_ = env_cause::listing_split;
  }
}

bool op_runner::withheld(const work_item& w) const {
  if (s_.privilege.keep_privileged || info(w.ev.kind).cls != op_class::xattr || !w.text)
    return false;
  const op k = w.ev.kind;
  const bool list = k == op::listxattr || k == op::llistxattr || k == op::flistxattr ||
                    k == op::listxattrat;
  return !list && privileged_xattr(*w.text);
}

void op_runner::note_time(uint64_t start_tick, uint64_t read, uint64_t written) {
  const uint64_t since = start_tick > s_.start_tick ? ticks_.to_ns(start_tick - s_.start_tick) : 0;
  const size_t slice = static_cast<size_t>(since / timeline_ns);
  if (slice >= 1u << 20) return;  // a day in: the report keeps no more
  if (slice >= stats_.timeline.size()) stats_.timeline.resize(slice + 1);
  timeline_slice& t = stats_.timeline[slice];
  ++t.ops;
  t.bytes_read += read;
  t.bytes_written += written;
}

void op_runner::release(const work_item& w) {
  for (const handle_id h : w.fx.released) {
    handle_slot& s = s_.handles[h];
    if (s.fd >= 0) {
      if (requests_) requests_->forget_fd(s.fd);
      ::close(s.fd);
    }
    s.fd = -1;
  }
}

// What must be reaped before w: every request that had completed when w was issued in the
// recording; all of them before w drops an fd (a request may still use it). A recorded
// io_uring_enter or io_submit ends the batch queued before it.
void op_runner::before_op(const work_item& w) {
  const event& e = w.ev;
  const engine en = has(e.kind, F_VIA) ? engine_of(e.via) : engine::syscall;
  // Whatever the thread does that is not a request comes after the submission it made
  // before: what is queued goes to the kernel first (its io_uring_enter ends a batch too).
  if (en != engine::io_uring && en != engine::aio) requests_->end_batch();
  if (requests_->idle()) return;
  const op_class cls = info(e.kind).cls;
  if (!w.fx.released.empty() || e.kind == op::close)
    requests_->drain();
  else if (cls != op_class::unreplayable && cls != op_class::process)
    requests_->reap_before(e.ts);
  acknowledge();
}

bool op_runner::submit_request(const work_item& w) {
  const event& e = w.ev;
  const engine en = engine_of(e.via);
  if (en != engine::io_uring && en != engine::aio) return false;
  engine_stats& st = stats_.engines[static_cast<size_t>(en)];
  const int fd = fd_of(w.fx.h1);
  if (!s_.same_engines || fd < 0) {  // (no fd: the syscall fails with EBADF, as it would)
    ++st.as_syscalls;
    return false;
  }
  if (!requests_)
    requests_ = std::make_unique<engine_requests>(
        stats_.engines,
        [this](const work_item& d, int64_t res, uint64_t t0) { request_done(d, res, t0); });
  std::span<const uint8_t> data;
  std::span<uint8_t> sink;
  const op_class cls = info(e.kind).cls;
  if (cls == op_class::write) {
    const auto buf =
        fill(w.sources, s_.handles[w.fx.h1].key, static_cast<uint64_t>(e.offset), e.size);
    if (buf.size() < std::min<uint64_t>(e.size, max_io_bytes)) return false;
    data = buf;
  } else if (cls == op_class::read) {
    sink = s_.sink.first(std::min<uint64_t>(e.size, std::min(max_io_bytes, s_.sink.size())));
  }
  if (!requests_->submit(w, fd, data, sink, ops_finished_)) {
    ++st.as_syscalls;
    return false;
  }
  return true;
}

void op_runner::request_done(const work_item& w, int64_t res, uint64_t t0) {
  difference_ = false;
  listing_differs_ = false;
  uint64_t read = 0, written = 0;
  if (res > 0) {
    const op_class cls = info(w.ev.kind).cls;
    if (cls == op_class::read) read = static_cast<uint64_t>(res);
    if (cls == op_class::write) written = static_cast<uint64_t>(res);
  }
  stats_.bytes_read += read;
  stats_.bytes_written += written;
  count(w, res, ticks_.to_ns(ticks_.now() - t0));
  note_time(t0, read, written);
}

void op_runner::acknowledge() {
  if (!done_) return;
  uint64_t settled = ops_finished_;
  if (requests_ && !requests_->idle()) settled = std::min(settled, requests_->oldest());
  if (settled > acked_) {
    done_->advance(static_cast<uint32_t>(settled - acked_));
    acked_ = settled;
  }
}

void op_runner::settle_all() {
  if (requests_) requests_->drain();
  acknowledge();
}

// A page stored through a shared mapping of the file, as recorded: mapped and written. A
// page beyond the replayed file's end (SIGBUS) or a file that cannot be mapped (opened
// write-only) is written with pwrite instead, counted under as_syscalls.
int64_t op_runner::mapped_store(const work_item& w, int fd, std::span<const uint8_t> bytes) {
  engine_stats& st = stats_.engines[static_cast<size_t>(engine::mapped)];
  const event& e = w.ev;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = static_cast<uint64_t>(e.offset) & ~(page - 1);
  const uint64_t len = static_cast<uint64_t>(e.offset) - start + bytes.size();
  struct stat st_file;
  void* map = MAP_FAILED;
  if (!bytes.empty() && ::fstat(fd, &st_file) == 0 &&
      static_cast<uint64_t>(st_file.st_size) >= static_cast<uint64_t>(e.offset) + bytes.size())
    map = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
  // The pages made writable first: a file system that cannot back them (ENOSPC, EIO) says
  // so here, where a store would raise SIGBUS.
  if (map != MAP_FAILED && ::madvise(map, len, MADV_POPULATE_WRITE) != 0) {
    ::munmap(map, len);
    map = MAP_FAILED;
  }
  if (map == MAP_FAILED) {
    ++st.as_syscalls;
    return sys(::pwrite(fd, bytes.data(), bytes.size(), e.offset));
  }
  std::memcpy(static_cast<uint8_t*>(map) + (static_cast<uint64_t>(e.offset) - start),
              bytes.data(), bytes.size());
  ::munmap(map, len);
  ++st.requests;
  ++st.submits;
  return static_cast<int64_t>(bytes.size());
}

}  // namespace fsrr
