// What storage engines submit without a syscall per operation, as trace events: io_uring
// requests, Linux AIO's iocbs, and stores through shared mappings of files.
//
// io_uring. The programs send one record per request as it
// completes: what was submitted (opcode, fd or fixed-file index, offset, length, flags), the
// result, and the file it ran on. Each becomes the syscall that does the same to the file
// (a READ at an offset is a pread64, FSYNC with DATASYNC an fdatasync), on the submitting
// thread, at its submission time, lasting until its completion; a ring's registered file is
// an fd of its own from fixed_fd_base on, bound (fd_bind) where the trace first meets it, as
// is an fd the fd table does not know (or knows for another file). A request cancelled
// before it ran (-ECANCELED) is counted, not replayed. Requests on names (opens, closes,
// stat, renames, links, xattrs) are decoded as the syscalls doing the same
// (decode_uring_name), an open into a slot of the ring's table (a direct descriptor) as an
// open returning an fd of the trace's own for the slot, FIXED_FD_INSTALL as the F_DUPFD of
// it, splice and tee as the splice(2) they do (uring_splice); those the replay cannot repeat
// (a splice into a pipe from a registered fd, driver commands) make the trace incomplete;
// those on
// no file (NOP, timeouts, polls) and on sockets and pipes are counted, and the bytes moved
// through a pipe or a Unix socket are stream events (uring_stream), as the syscalls' are.
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <linux/aio_abi.h>

#include "decoder.h"
#include "syscall_ctx.h"

namespace fsrr::recorder {
namespace {

// The UAPI's opcodes (linux/io_uring.h); their numbers never change.
enum : uint8_t {
  uring_nop = 0,
  uring_readv = 1,
  uring_writev = 2,
  uring_fsync = 3,
  uring_read_fixed = 4,
  uring_write_fixed = 5,
  uring_sync_file_range = 8,
  uring_fallocate = 17,
  uring_read = 22,
  uring_write = 23,
  uring_fadvise = 24,
  uring_ftruncate = 55,
  uring_readv_fixed = 60,
  uring_writev_fixed = 61,
  uring_sendmsg = 9,
  uring_recvmsg = 10,
  uring_send = 26,
  uring_recv = 27,
  uring_send_zc = 47,
  uring_sendmsg_zc = 48,
  uring_splice_op = 30,
  uring_tee = 33,
};
constexpr uint32_t splice_fd_in_fixed = 1u << 31;  // SPLICE_F_FD_IN_FIXED

// Requests that open, close, name, stat or splice files, or pass a command through to a
// driver: decoded as the syscall doing the same where decode_uring_name knows one.
bool names_files(uint8_t opcode) {
  switch (opcode) {
    case 18:  // OPENAT
    case 19:  // CLOSE
    case 21:  // STATX
    case 28:  // OPENAT2
    case 35:  // RENAMEAT
    case 36:  // UNLINKAT
    case 37:  // MKDIRAT
    case 38:  // SYMLINKAT
    case 39:  // LINKAT
    case 41:  // FSETXATTR
    case 42:  // SETXATTR
    case 43:  // FGETXATTR
    case 44:  // GETXATTR
    case 46:  // URING_CMD
    case 54:  // FIXED_FD_INSTALL
      return true;
    default:
      return false;
  }
}
constexpr uint64_t req_fixed_file = 1;  // REQ_F_FIXED_FILE: IOSQE_FIXED_FILE
constexpr uint32_t fsync_datasync = 1;  // IORING_FSYNC_DATASYNC

// The op a request on a file does, as the syscall doing the same, with its range and flags;
// false for an opcode fsrr does not know.
bool uring_op(const fsrr_uring_sub& sub, int32_t res, event& e) {
  switch (sub.opcode) {
    case uring_read:
    case uring_read_fixed:
      e.kind = sub.off == -1 ? op::read : op::pread64;
      e.size = sub.len;
      break;
    case uring_write:
    case uring_write_fixed:
      e.kind = sub.off == -1 ? op::write : op::pwrite64;
      e.size = sub.len;
      break;
    case uring_readv:
    case uring_readv_fixed:
    case uring_writev:
    case uring_writev_fixed: {
      const bool write = sub.opcode == uring_writev || sub.opcode == uring_writev_fixed;
      e.kind = sub.off == -1 ? (write ? op::writev : op::readv) : (write ? op::pwritev : op::preadv);
      e.size = res > 0 ? static_cast<uint64_t>(res) : 0;  // the iovecs' total is not sent
      e.aux = sub.len;  // iovec count
      break;
    }
    case uring_fsync:
      e.kind = sub.op_flags & fsync_datasync ? op::fdatasync : op::fsync;
      break;
    case uring_sync_file_range:
    case uring_fallocate:
    case uring_fadvise:  // a range and flags (fallocate's mode, fadvise's advice)
      e.kind = sub.opcode == uring_sync_file_range ? op::sync_file_range
               : sub.opcode == uring_fallocate     ? op::fallocate
                                                   : op::fadvise64;
      e.offset = sub.off;
      e.size = sub.len;
      e.flags = sub.op_flags;
      break;
    case uring_ftruncate:
      e.kind = op::ftruncate;
      e.size = sub.len;
      break;
    default:  // on a file, and not one fsrr knows: a newer opcode, say
      return false;
  }
  return true;
}

}  // namespace

decoder::fd_ref decoder::bind_engine_fd(task& t, int32_t tid, uint64_t files, int32_t fd,
                                        const fsrr_file& f, const record_items& it, uint64_t ts,
                                        int64_t pos, int slot) {
  fd_ref r;
  const file_id id = file_of(f);
  uring_file& u = uring_files_[f.file];
  if (const fd_entry* known = fds_.find(files, fd, f.file); known && known->file == id) {
    // the same open file (a struct file reused for another file is another id)
    if (u.ino != f.ino || u.file != id) u = {id, known->path, f.ino};
    r.file = known->file;
    r.path = known->path;
    return r;
  }
  // As this record (or an earlier one on the same struct file) describes it.
  if (u.ino != f.ino || u.file != id) {
    u = {id, no_id, f.ino};
    const walk_view& walk = it.walk[slot];
    u.path = walk_path(t, walk);
    if (u.path != no_id && !(walk.flags & FSRR_WALK_DELETED) && it.attr[slot]) {
      const observed o = observe(f, it.attr[slot], u.file);
      tree_.existed(u.path, &o);
    }
  }
  r.file = u.file;
  r.path = u.path;
  if (!kept_.empty() && (u.path == no_id || !inside(u.path))) {
    r.filtered = true;  // --path: neither the file's fd nor its ops are in the trace
    return r;
  }
  if (u.path == no_id) unresolved();
  // Bound where the trace first meets it: the replay opens the file there, at the position
  // it had before this request.
  bind(files, fd, f, u.file, u.path, false);
  event b;
  b.kind = op::fd_bind;
  b.ts = ts;
  b.thread = thread_of(t, tid);
  b.fd = fd;
  b.file = u.file;
  b.path = u.path;
  b.offset = pos;
  b.flags = f.f_flags;
  w_.append(b);
  return r;
}

// A page dirtied through a shared mapping: a pwrite64 of that page (up to the file's end)
// through an fd the trace gives the file in the faulting thread's table.
void decoder::on_mmap_write(std::span<const uint8_t> record) {
  constexpr uint64_t page = 4096;
  record_items it;
  const auto* h = parsed<fsrr_mmap_write>(record, it, true);
  if (!h) return;
  const fsrr_file& f = *it.file[0];
  const auto tid = static_cast<int32_t>(h->h.tid);
  task& t = task_of(tid);
  const uint64_t files = h->files ? h->files : t.files;
  if (f.size <= 0 || h->offset >= static_cast<uint64_t>(f.size)) return;  // SIGBUS, no write
  // Memory shared through a file no path names (MAP_SHARED|MAP_ANONYMOUS, memfd, SysV shm) or
  // a POSIX shared-memory object: IPC, as their fds are
  const walk_view& walk = it.walk[0];
  uring_file& known = uring_files_[f.file];
  if (known.ino == f.ino && known.ipc) return;
  if (walk.present) {
    const path_id p = walk_path(t, walk);
    if (p == no_id || shm_object(p, f)) {
      known = {no_id, no_id, f.ino, true};
      w_.add_nonfile(op::mmap, fd_kind::other);
      return;
    }
  }
  auto [at, added] = mapped_fds_.try_emplace({files, f.file}, 0);
  if (added) at->second = mapped_fd_base + next_mapped_fd_[files]++;
  event e;
  e.kind = op::pwrite64;
  e.ts = trace_time(h->h.ts);
  e.fd = at->second;
  e.offset = static_cast<int64_t>(h->offset);
  e.size = std::min<uint64_t>(page, static_cast<uint64_t>(f.size) - h->offset);
  e.result = static_cast<int64_t>(e.size);
  const fd_ref r = bind_engine_fd(t, tid, files, e.fd, f, it, e.ts, f.pos);
  if (r.filtered) {
    ++stats_.filtered;
    return;
  }
  e.file = r.file;
  e.thread = thread_of(t, tid);
  e.via = make_via(engine::mapped, 0);
  tree_.settle_pending(e.ts);
  w_.append(e);
}

uint32_t decoder::queue_number(uint64_t queue) {
  auto [at, added] = queues_.try_emplace(queue, 0);
  if (added) at->second = static_cast<uint32_t>(queues_.size());
  return at->second;
}

// A registered file's index as an fd: the fd it was registered from while that is open (the
// same open file: one position), else an fd of the trace's own for it.
int32_t decoder::fixed_fd(uint64_t files, const fsrr_uring_sub& sub, uint64_t file) {
  auto [at, added] = fixed_fds_.try_emplace({files, sub.ring, sub.fd}, -1);
  if (at->second < 0 || !fds_.find(files, at->second, file)) {
    const int real = fds_.fd_of_file(files, file);
    if (real >= 0 && real < fixed_fd_base) {
      at->second = real;
    } else {
      int32_t& own = pseudo_fixed_[{files, sub.ring, sub.fd}];
      if (!own) own = fixed_fd_base + next_fixed_fd_[files]++;
      at->second = own;
    }
  }
  return at->second;
}

void decoder::on_uring(std::span<const uint8_t> record) {
  record_items it;
  const auto* h = parsed<fsrr_uring>(record, it);
  if (!h) return;
  const fsrr_uring_sub& sub = h->sub;
  if (sub.opcode == uring_splice_op || sub.opcode == uring_tee) {
    if (!uring_splice(*h, it)) {
      w_.mark_incomplete(incomplete_uring_ops);
      w_.add_nonfile(op::io_uring_enter, fd_kind::other);
    }
    return;
  }
  if (names_files(sub.opcode)) {
    if (decode_uring_name(*h, it)) return;
    w_.mark_incomplete(incomplete_uring_ops);
    w_.add_nonfile(op::io_uring_enter, fd_kind::other);
    return;
  }
  const fsrr_file* f = it.file[0];
  // No file: a NOP, a timeout, a poll, a message to a ring, an update of the ring's own table
  // of registered files (FILES_UPDATE: the file a later request uses is known by itself).
  if (!f || !f->file) return;
  const auto tid = static_cast<int32_t>(h->h.tid);
  task& t = task_of(tid);
  const uint64_t files = sub.files ? sub.files : t.files;
  if (const auto kind = nonfile_kind(*f)) {  // a socket's SEND, a pipe's READ: counted
    w_.add_nonfile(op::io_uring_enter, *kind);
    uring_stream(*h, *f, *kind, t, tid);
    return;
  }

  event e;
  e.ts = trace_time(h->h.ts);
  e.dur = h->dur;
  e.result = h->res;
  if (h->res == -ECANCELED) {  // never ran: a broken link, a cancel, the ring torn down
    w_.add_nonfile(op::io_uring_enter, fd_kind::other);
    return;
  }
  e.fd = sub.fd;
  if (sub.flags & req_fixed_file) e.fd = fixed_fd(files, sub, f->file);
  if (!uring_op(sub, h->res, e)) {
    w_.mark_incomplete(incomplete_uring_ops);
    w_.add_nonfile(op::io_uring_enter, fd_kind::other);
    return;
  }
  if (e.kind == op::read || e.kind == op::write || e.kind == op::pread64 ||
      e.kind == op::pwrite64 || e.kind == op::readv || e.kind == op::writev ||
      e.kind == op::preadv || e.kind == op::pwritev) {
    const int64_t moved = h->res > 0 ? h->res : 0;
    if (sub.off != -1) {
      e.offset = sub.off;
    } else {
      e.offset = f->pos - moved;  // the file's position moved by what the request did
    }
    if (is_write(e.kind) && (f->f_flags & O_APPEND) && !(sub.op_flags & rwf_noappend))
      e.offset = f->size - moved;  // appended: the end it had
  }

  int64_t pos = f->pos;  // where the file's position stood before the request
  if (sub.off == -1 && (e.kind == op::read || e.kind == op::write || e.kind == op::readv ||
                        e.kind == op::writev))
    pos -= h->res > 0 ? h->res : 0;
  const fd_ref r = bind_engine_fd(t, tid, files, e.fd, *f, it, e.ts, pos);
  if (r.filtered || (!kept_.empty() && (r.path == no_id || !inside(r.path)))) {
    ++stats_.filtered;
    return;
  }
  e.file = r.file;
  e.thread = thread_of(t, tid);
  const bool fixed_buffer = sub.opcode == uring_read_fixed || sub.opcode == uring_write_fixed ||
                            sub.opcode == uring_readv_fixed || sub.opcode == uring_writev_fixed;
  uint32_t sqe = static_cast<uint32_t>(sub.flags);
  if (h->res < 0) sqe &= ~sqe_link;  // the chain broke here: the rest never ran (a hard link goes on)
  e.via = make_via(engine::io_uring, queue_number(sub.ring), sqe,
                   (fixed_buffer ? via_fixed_buffer : 0) | (sub.sqpoll ? via_sqpoll : 0));
  tree_.settle_pending(e.ts);
  w_.append(e);
}

// SPLICE moves bytes between a pipe and a file (or two pipes), TEE copies a pipe's into
// another: the event splice(2) makes, fd the side read (its file in slot 1 of the record),
// fd2 the side written (slot 0: the request's own file), each offset -1 for the fd's position
// (a pipe's always). Between two pipes, or a pipe and a socket, it is counted as a stream's.
bool decoder::uring_splice(const fsrr_uring& h, const record_items& it) {
  const fsrr_uring_sub& sub = h.sub;
  if (sub.opcode == uring_tee || h.res == -ECANCELED) {  // two pipes; or it never ran
    w_.add_nonfile(op::io_uring_enter, sub.opcode == uring_tee ? fd_kind::pipe : fd_kind::other);
    return true;
  }
  const bool fixed_in = sub.op_flags & splice_fd_in_fixed;
  const fsrr_file* out = it.file[0];
  const fsrr_file* in = fixed_in ? nullptr : it.file[1];
  const bool out_known = out && out->file, in_known = in && in->file;
  const bool out_file = out_known && !nonfile_kind(*out);
  const bool in_file = in_known && !nonfile_kind(*in);
  // splice(2) wants a pipe on one side: into a file, the side read is one (registered or
  // not); out into a pipe, the side read must be known to tell a file from another pipe.
  if (!out_file && (!out_known || !in_known || !in_file)) {
    if (out_known && in_known) {  // two pipes, or a pipe and a socket
      w_.add_nonfile(op::io_uring_enter, *nonfile_kind(*out));
      return true;
    }
    if (h.res < 0) {  // failed (a bad fd): nothing moved
      w_.add_nonfile(op::io_uring_enter, fd_kind::other);
      return true;
    }
    return false;  // from a registered fd, or one closed since: not known
  }
  if (out_file && in_file) {  // two files: splice(2) refuses that (EINVAL)
    w_.add_nonfile(op::io_uring_enter, fd_kind::other);
    return true;
  }
  const bool reads = in_file;  // the file is the side read
  const auto tid = static_cast<int32_t>(h.h.tid);
  task& t = task_of(tid);
  const uint64_t files = sub.files ? sub.files : t.files;
  event e;
  e.kind = op::splice;
  e.ts = trace_time(h.h.ts);
  e.dur = h.dur;
  e.result = h.res;
  e.fd = fixed_in ? -1 : static_cast<int32_t>(sub.len >> 32);  // -1: a registered pipe
  e.fd2 = sub.flags & req_fixed_file ? fixed_fd(files, sub, out->file) : sub.fd;
  e.offset = static_cast<int64_t>(sub.aux);
  e.offset2 = sub.off;
  e.size = sub.len & 0xffffffff;
  e.flags = sub.op_flags & ~splice_fd_in_fixed;
  const fsrr_file& f = reads ? *in : *out;
  const int64_t at = reads ? e.offset : e.offset2;
  const int64_t moved = h.res > 0 ? h.res : 0;
  const int64_t pos = at == -1 ? static_cast<int64_t>(f.pos) - moved : static_cast<int64_t>(f.pos);
  const fd_ref r = bind_engine_fd(t, tid, files, reads ? e.fd : e.fd2, f, it, e.ts, pos, reads ? 1 : 0);
  if (r.filtered || (!kept_.empty() && (r.path == no_id || !inside(r.path)))) {
    ++stats_.filtered;
    return true;
  }
  (reads ? e.file : e.file2) = r.file;
  e.thread = thread_of(t, tid);
  e.via = make_via(engine::io_uring, queue_number(sub.ring),
                   static_cast<uint32_t>(sub.flags) & (h.res < 0 ? ~sqe_link : ~0u),
                   sub.sqpoll ? via_sqpoll : 0);
  tree_.settle_pending(e.ts);
  w_.append(e);
  return true;
}

// The bytes a request moved through a pipe, a FIFO or a Unix socket (READ, WRITE and their
// vectored and fixed-buffer forms, SEND, RECV, SENDMSG, RECVMSG, the zero-copy sends): a
// stream event, as stream_op makes of the syscalls, so that a copy through io_uring copies.
void decoder::uring_stream(const fsrr_uring& h, const fsrr_file& f, fd_kind kind, task& t,
                           int32_t tid) {
  const fsrr_uring_sub& sub = h.sub;
  if (h.res <= 0) return;
  bool out;
  switch (sub.opcode) {
    case uring_readv:
    case uring_read_fixed:
    case uring_read:
    case uring_readv_fixed:
    case uring_recvmsg:
    case uring_recv:
      out = false;
      break;
    case uring_writev:
    case uring_write_fixed:
    case uring_write:
    case uring_writev_fixed:
    case uring_sendmsg:
    case uring_send:
    case uring_send_zc:
    case uring_sendmsg_zc:
      out = true;
      break;
    default:
      return;
  }
  const auto [written, read] = stream_ends(f, kind);
  const file_id stream = out ? written : read;
  if (stream == no_id) return;
  event e;
  e.kind = out ? op::stream_write : op::stream_read;
  const bool vector = sub.opcode == uring_readv || sub.opcode == uring_writev ||
                      sub.opcode == uring_readv_fixed || sub.opcode == uring_writev_fixed;
  e.aux = static_cast<uint64_t>(vector ? (out ? op::writev : op::readv) : (out ? op::write : op::read));
  e.ts = trace_time(h.h.ts);
  e.dur = h.dur;
  e.result = h.res;
  // the bytes asked for where the request says (a READ's or WRITE's length; a vectored one's
  // total and a SEND's length are not sent): at least the bytes moved
  e.size = vector ? static_cast<uint64_t>(h.res) : std::max<uint64_t>(sub.len, h.res);
  const uint64_t files = sub.files ? sub.files : t.files;
  e.fd = sub.flags & req_fixed_file ? fixed_fd(files, sub, f.file) : sub.fd;
  e.file = stream;
  e.thread = thread_of(t, tid);
  w_.append(e);
}

void decoder::on_uring_names(std::span<const uint8_t> record) {
  record_items it;
  const auto* h = parsed<fsrr_uring_names>(record, it);
  if (!h) return;
  // Requests whose completion never came (a ring torn down) must not pile up.
  if (uring_names_.size() >= 65536) uring_names_.clear();
  uring_names& n = uring_names_[{h->ring, h->h.ts}];
  for (int i = 0; i < 2; ++i)
    if (it.str[i]) n.name[i] = std::string(*it.str[i]);
}

bool decoder::decode_uring_name(const fsrr_uring& h, const record_items& it) {
  const fsrr_uring_sub& sub = h.sub;
  uring_names names;
  if (const auto at = uring_names_.find({sub.ring, sub.ts}); at != uring_names_.end()) {
    names = std::move(at->second);
    uring_names_.erase(at);
  }
  record_items in = it;
  fsrr_syscall fake{};
  fake.h = h.h;
  fake.dur = h.dur;
  fake.ret = h.res;
  auto& a = fake.args;
  const auto dfd = static_cast<uint64_t>(static_cast<int64_t>(sub.fd));
  const auto dfd2 = static_cast<uint64_t>(sub.off);
  uint64_t how[3] = {};
  int names_needed = 1;
  const std::string* xattr_name = nullptr;
  fsrr_fdref fd_file{};
  switch (sub.opcode) {
    case 18:  // OPENAT
    case 28:  // OPENAT2
      if (const uint32_t file_slot = sub.aux >> 32; file_slot && h.res >= 0) {
        // into a slot of the ring's table (a direct descriptor): the fd of the trace's own
        // that stands for the slot, opened as an fd would be (a slot given 1-based, or
        // allocated: the result is its index)
        const int32_t slot = file_slot == ~0u ? static_cast<int32_t>(h.res)
                                              : static_cast<int32_t>(file_slot - 1);
        fake.ret = slot_fd(sub.files ? sub.files : task_of(static_cast<int32_t>(h.h.tid)).files,
                           sub.ring, slot);
      }
      if (sub.opcode == 18) {
        fake.nr = __NR_openat;
        a[0] = dfd, a[2] = sub.op_flags, a[3] = sub.len;
      } else {
        fake.nr = __NR_openat2;
        how[0] = sub.op_flags, how[1] = sub.len, how[2] = sub.aux & 0xffffffff;
        a[0] = dfd, a[3] = sizeof how;
        in.user = {reinterpret_cast<const uint8_t*>(how), sizeof how};
      }
      break;
    case 19:  // CLOSE
      fake.nr = __NR_close;
      a[0] = dfd;
      names_needed = 0;
      if (sub.aux) {  // a slot of the ring's table: the trace's fd for it, if it has one
        const uint64_t files = sub.files ? sub.files : task_of(static_cast<int32_t>(h.h.tid)).files;
        const auto at = fixed_fds_.find({files, sub.ring, static_cast<int32_t>(sub.aux - 1)});
        // Never used by a request (not traced), or standing for the fd it was registered
        // from, which stays open: only the slot goes.
        if (at == fixed_fds_.end() || at->second < fixed_fd_base) {
          if (at != fixed_fds_.end()) fixed_fds_.erase(at);
          w_.add_nonfile(op::io_uring_enter, fd_kind::other);
          return true;
        }
        a[0] = static_cast<uint64_t>(at->second);
        fixed_fds_.erase(at);
      }
      break;
    case 54: {  // FIXED_FD_INSTALL: a registered file given an fd of the table, as F_DUPFD
      const fsrr_file* f = it.file[0];
      if (!f || !f->file) return false;
      const uint64_t files = sub.files ? sub.files : task_of(static_cast<int32_t>(h.h.tid)).files;
      fake.nr = __NR_fcntl;
      a[0] = static_cast<uint64_t>(fixed_fd(files, sub, f->file));
      a[1] = sub.op_flags & O_CLOEXEC ? F_DUPFD_CLOEXEC : F_DUPFD;
      names_needed = 0;
      fd_file = {f->file, f->pos, f->size, f->f_flags, 0};
      in.ref[0] = in.ref[2] = &fd_file;  // the new fd is that file too
      break;
    }
    case 21:  // STATX
      fake.nr = __NR_statx;
      a[0] = dfd, a[2] = sub.op_flags, a[3] = sub.len;
      break;
    case 35:  // RENAMEAT
      fake.nr = __NR_renameat2;
      a[0] = dfd, a[2] = dfd2, a[4] = sub.op_flags;
      names_needed = 2;
      break;
    case 36:  // UNLINKAT
      fake.nr = __NR_unlinkat;
      a[0] = dfd, a[2] = sub.op_flags;
      break;
    case 37:  // MKDIRAT
      fake.nr = __NR_mkdirat;
      a[0] = dfd, a[2] = sub.len;
      break;
    case 38:  // SYMLINKAT: the link's name at the second dirfd; the target as a string
      fake.nr = __NR_symlinkat;
      a[1] = dfd2;
      names_needed = 2;
      break;
    case 39:  // LINKAT
      fake.nr = __NR_linkat;
      a[0] = dfd, a[2] = dfd2, a[4] = sub.op_flags;
      names_needed = 2;
      break;
    case 41:  // FSETXATTR, SETXATTR, FGETXATTR, GETXATTR: the attribute's name second
    case 42:
    case 43:
    case 44: {
      const bool path = sub.opcode == 42 || sub.opcode == 44;
      if (!path && (sub.flags & req_fixed_file)) return false;  // a registered file's slot
      if (!names.name[1]) return false;
      fake.nr = sub.opcode == 41 ? __NR_fsetxattr
                : sub.opcode == 42 ? __NR_setxattr
                : sub.opcode == 43 ? __NR_fgetxattr
                                   : __NR_getxattr;
      a[0] = dfd, a[3] = sub.len, a[4] = sub.op_flags;
      names_needed = path ? 1 : 0;
      xattr_name = &*names.name[1];
      if (!path) {  // the fd as the request found it: the file the kernel looked it up to
        const fsrr_file* f = it.file[0];
        if (!f || !f->file) return false;
        fd_file = {f->file, f->pos, f->size, f->f_flags, 0};
        in.ref[0] = &fd_file;
      }
      break;
    }
    default:
      return false;
  }
  for (int i = 0; i < names_needed; ++i)
    if (!names.name[i]) return false;
  in.str[0] = in.str[1] = in.str[2] = std::nullopt;
  if (names_needed) in.str[0] = *names.name[0];
  if (names_needed == 2) in.str[fake.nr == __NR_symlinkat ? 2 : 1] = *names.name[1];
  if (xattr_name) in.str[2] = *xattr_name;
  const auto& entry = syscalls()[fake.nr % FSRR_MAX_SYSCALLS];
  if (!entry) return false;
  const auto tid = static_cast<int32_t>(h.h.tid);
  if (h.res == -ECANCELED) {  // never ran
    w_.add_nonfile(op::io_uring_enter, fd_kind::other);
    return true;
  }
  syscall_ctx c{fake, in, entry->capture, task_of(tid), {}, no_id};
  c.e.kind = entry->kind;
  c.e.ts = trace_time(h.h.ts);
  c.e.dur = h.dur;
  c.e.result = fake.ret;
  decode(c);
  return true;
}

int32_t decoder::slot_fd(uint64_t files, uint64_t ring, int32_t slot) {
  int32_t& own = pseudo_fixed_[{files, ring, slot}];
  if (!own) own = fixed_fd_base + next_fixed_fd_[files]++;
  fixed_fds_[{files, ring, slot}] = own;
  return own;
}

// Linux AIO. io_submit's record carries the iocbs it took (their addresses and contents);
// io_getevents' the io_events it returned, each naming its iocb. A request becomes its event
// when reaped: the syscall that does the same, on the submitting thread, at the io_submit,
// lasting to the io_getevents' return, with the result the io_event reports. What no
// io_getevents reaped while recording makes the trace incomplete (finish()).
void decoder::decode_aio_submit(syscall_ctx& c) {
  event& e = c.e;
  const uint64_t ctx = c.h.args[0];
  e.aux = c.h.args[1];
  const std::span<const uint8_t> iocbs = c.it.aio[0];
  const size_t n = iocbs.size() / sizeof(fsrr_aio_iocb);
  if (e.result > 0 && n < static_cast<size_t>(e.result)) w_.mark_incomplete(incomplete_aio);
  for (size_t i = 0; i < n && i < static_cast<size_t>(std::max<int64_t>(e.result, 0)); ++i) {
    fsrr_aio_iocb raw;
    std::memcpy(&raw, iocbs.data() + i * sizeof raw, sizeof raw);
    iocb cb;
    static_assert(sizeof cb == sizeof raw.iocb);
    std::memcpy(&cb, raw.iocb, sizeof cb);
    aio_request r;
    r.ts = e.ts;
    r.tid = static_cast<int32_t>(c.h.h.tid);
    r.files = c.t.files;
    r.opcode = cb.aio_lio_opcode;
    r.fd = static_cast<int32_t>(cb.aio_fildes);
    r.nbytes = cb.aio_nbytes;
    r.offset = cb.aio_offset;
    r.rw_flags = static_cast<uint32_t>(cb.aio_rw_flags);
    r.ctx = ctx;
    if (const fd_entry* f = fds_.find(r.files, r.fd)) r.fd_at_submit = *f;
    if (const auto early = aio_early_.find({ctx, raw.addr}); early != aio_early_.end()) {
      const auto [res, done] = early->second;  // reaped by another thread, decoded first
      aio_early_.erase(early);
      aio_done(r, res, done);
      continue;
    }
    aio_pending_[{ctx, raw.addr}] = r;
  }
  emit(c);
}

void decoder::decode_aio_events(syscall_ctx& c) {
  const event reaped = c.e;  // the io_getevents call itself
  const uint64_t ctx = c.h.args[0];
  const uint64_t done = reaped.ts + reaped.dur;
  const std::span<const uint8_t> events = c.it.aio[1];
  if (reaped.result > 0 && events.size() / sizeof(io_event) < static_cast<size_t>(reaped.result))
    w_.mark_incomplete(incomplete_aio);
  for (size_t i = 0; i + sizeof(io_event) <= events.size(); i += sizeof(io_event)) {
    io_event ev;
    std::memcpy(&ev, events.data() + i, sizeof ev);
    const auto it = aio_pending_.find({ctx, ev.obj});
    if (it == aio_pending_.end()) {
      // Submitted before the recording began, or by a thread whose io_submit has not been
      // decoded yet (its record is sent at its exit; a reaper thread may return first).
      if (aio_early_.size() < 4096) aio_early_[{ctx, ev.obj}] = {ev.res, done};
      continue;
    }
    const aio_request r = it->second;
    aio_pending_.erase(it);
    aio_done(r, ev.res, done);
  }
  emit(c);
}

void decoder::aio_done(const aio_request& r, int64_t res, uint64_t done) {
  event e;
  e.ts = r.ts;
  e.dur = done > r.ts ? done - r.ts : 0;
  e.result = res;
  e.fd = r.fd;
  switch (r.opcode) {
    case IOCB_CMD_PREAD:
    case IOCB_CMD_PWRITE:
      e.kind = r.opcode == IOCB_CMD_PREAD ? op::pread64 : op::pwrite64;
      e.offset = r.offset;
      e.size = r.nbytes;
      break;
    case IOCB_CMD_PREADV:
    case IOCB_CMD_PWRITEV:
      e.kind = r.opcode == IOCB_CMD_PREADV ? op::preadv : op::pwritev;
      e.offset = r.offset;
      e.size = res > 0 ? static_cast<uint64_t>(res) : 0;  // the iovecs' total
      e.aux = r.nbytes;                                   // iovec count
      break;
    case IOCB_CMD_FSYNC:
      e.kind = op::fsync;
      break;
    case IOCB_CMD_FDSYNC:
      e.kind = op::fdatasync;
      break;
    default:  // POLL, NOOP: no file I/O
      return w_.add_nonfile(op::io_submit, fd_kind::other);
  }
  if (res == -ECANCELED) return w_.add_nonfile(e.kind, fd_kind::other);  // io_cancel'd
  const fd_entry* f = r.fd_at_submit ? &*r.fd_at_submit : fds_.find(r.files, r.fd);
  if (!f) return unresolved();
  if (f->nonfile) return w_.add_nonfile(e.kind, f->kind);
  if (!kept_.empty() && (f->path == no_id || !inside(f->path))) {
    ++stats_.filtered;
    return;
  }
  e.file = f->file;
  task& t = task_of(r.tid);
  e.thread = thread_of(t, r.tid);
  e.via = make_via(engine::aio, queue_number(r.ctx));
  tree_.settle_pending(e.ts);
  w_.append(e);
}

}  // namespace fsrr::recorder
