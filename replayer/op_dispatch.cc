#include "op_dispatch.h"

#include "durability.h"
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

op_runner::op_runner(replay_shared& shared, replay_stats& stats, int32_t tid, std::string host)
    : s_(shared), stats_(stats), tid_(tid), host_(std::move(host)) {}

op_runner::~op_runner() {
  drop_windows();
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
  const op kind = w.spliced ? op::splice : e.kind;
  const size_t k = static_cast<size_t>(kind);
  ++stats_.events;
  if (replayed == not_issued) {
    if (info(kind).cls == op_class::unreplayable)
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
  if (!listing_differs_ && result_matches(kind, e.result, replayed)) return;
  ++o.mismatches;
  ++stats_.mismatches;
  std::string where;
  if (w.p1)
    where = w.p1->trace_path();
  else if (w.fx.h1 && s_.handles[w.fx.h1].path != no_id && s_.trace)
    where = s_.trace->placed_path(s_.handles[w.fx.h1].path);
  else
    where = fmt::format("fd {}", e.fd);
  where = s_.target.shown(where);
  if (stats_.first_mismatches.size() < s_.listed_mismatches)
    stats_.first_mismatches.push_back({w.seq, tid_, host_, kind, where, e.result, replayed});
  if (replayed == -ENOSPC || replayed == -EDQUOT || replayed == -EIO)
    s_.request_stop(
        fmt::format("{} on the target: {} {}", strerrorname_np(-replayed), name(kind), where));
  else if (s_.strict)
    s_.request_stop(fmt::format("--strict: {} {} returned {} where the recording had {}",
                                name(kind), where, replayed, e.result));
}

// A recorded failure of the recording's environment is taken, not reproduced (unless
// --issue-all, which only tells it apart when the target took the other path); a failure of
// the target's environment where the recording succeeded gets the recorded effect another way.
uint64_t op_runner::run(const work_item& w) {
  const event& e = w.ev;
  // A mapping kept past the thread's other ops would keep an unlinked file's space taken.
  if (!windows_.empty() && !(has(e.kind, F_VIA) && engine_of(e.via) == engine::mapped))
    drop_windows();
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
  if (s_.after_point && !difference_) {
    const bool durable =
        r >= 0 && promises_durability(e, w.fx.h1 ? s_.handles[w.fx.h1].flags : 0);
    if (s_.crash_point ? (*s_.crash_point)(w.seq, durable) : durable) (*s_.after_point)(w.seq);
  }
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
// recording (afap, before a request: only those on its file it depends on, and room on its
// ring); all of them before w drops an fd (a request may still use it). A recorded
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
  else if (cls != op_class::unreplayable && cls != op_class::process) {
    if (!s_.timed && (en == engine::io_uring || en == engine::aio))
      requests_->reap_for(e, fd_of(w.fx.h1),
                          w.fx.h1 && (s_.handles[w.fx.h1].flags & O_APPEND));
    else
      requests_->reap_before(e.ts);
  }
  acknowledge();
}

}  // namespace fsrr
