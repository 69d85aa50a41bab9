// Each recorded syscall as a trace event: which argument lands in which event field
// (the conventions of format/ops.def), and what the call tells the fd tables and the
// initial tree.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

#include "decoder.h"
#include "kernel_constants.h"
#include "syscall_nr.h"
#include "syscall_table.h"

namespace fsrr::recorder {
namespace {

constexpr uint32_t fmode_created = FSRR_FMODE_CREATED;  // this open made the file
constexpr uint32_t rwf_append = 0x10, rwf_noappend = 0x20;
constexpr uint64_t ficlone = FSRR_FICLONE, ficlonerange = FSRR_FICLONERANGE;
constexpr uint32_t close_range_cloexec = 1u << 2;
constexpr uint32_t rename_noreplace = 1, rename_exchange = 2;
constexpr int at_removedir = 0x200;

template <class T>
bool user_as(std::span<const uint8_t> user, T& out) {
  if (user.size() < sizeof(T)) return false;
  std::memcpy(&out, user.data(), sizeof(T));
  return true;
}

// A struct of which the BPF side copies only the first `len` bytes: the rest is zero.
template <class T>
bool user_prefix(std::span<const uint8_t> user, T& out, size_t len) {
  if (user.size() < len || len > sizeof(T)) return false;
  std::memset(&out, 0, sizeof(T));
  std::memcpy(&out, user.data(), len);
  return true;
}

int64_t ns(int64_t sec, int64_t nsec) {
  return sec * 1000000000 + nsec;
}

// utime/utimes/utimensat times as offset (atime) and offset2 (mtime).
void decode_times(op kind, std::span<const uint8_t> user, event& e) {
  e.offset = e.offset2 = time_now;  // a NULL times pointer
  if (kind == op::utime) {
    int64_t t[2];
    if (user_as(user, t)) e.offset = ns(t[0], 0), e.offset2 = ns(t[1], 0);
  } else if (kind == op::utimensat) {
    struct timespec t[2];
    if (!user_as(user, t)) return;
    int64_t* out[2] = {&e.offset, &e.offset2};
    for (int i = 0; i < 2; ++i)
      *out[i] = t[i].tv_nsec == UTIME_NOW    ? time_now
                : t[i].tv_nsec == UTIME_OMIT ? time_omit
                                             : ns(t[i].tv_sec, t[i].tv_nsec);
  } else {  // utimes, futimesat: struct timeval[2]
    struct timeval t[2];
    if (user_as(user, t))
      e.offset = ns(t[0].tv_sec, t[0].tv_usec * 1000),
      e.offset2 = ns(t[1].tv_sec, t[1].tv_usec * 1000);
  }
}

bool is_write(op o) {
  return info(o).cls == op_class::write;
}

}  // namespace

struct decoder::syscall_ctx {
  const fsrr_syscall& h;
  const record_items& it;
  const fsrr_sc& cap;
  task& t;
  event e;
  path_id fd_path = no_id;   // the path behind e.fd
  path_id fd2_path = no_id;  // and behind e.fd2
  // Bytes the call moved: f_pos and *loff were advanced by this much.
  uint64_t moved() const { return h.ret > 0 ? static_cast<uint64_t>(h.ret) : 0; }
};

void decoder::on_syscall(std::span<const uint8_t> record) {
  const auto* h = header_as<fsrr_syscall>(record);
  record_items it;
  if (!h || !parse_items(record, sizeof *h, it)) {
    ++stats_.malformed;
    return;
  }
  const auto& entry = syscalls()[h->nr % FSRR_MAX_SYSCALLS];
  if (!entry) return;
  syscall_ctx c{*h, it, entry->capture, task_of(static_cast<int32_t>(h->h.tid)), {}, no_id};
  c.e.kind = entry->kind;
  c.e.ts = trace_time(h->h.ts);
  c.e.dur = h->dur;
  c.e.result = h->ret;
  decode(c);
}

void decoder::emit(syscall_ctx& c) {
  if (kept_replaced_ && c.e.result >= 0 && info(c.e.kind).cls == op_class::name &&
      (names_kept_dir(c.e.path) || (c.e.path2 != no_id && names_kept_dir(c.e.path2)))) {
    const op k = c.e.kind;
    if (k == op::rmdir || k == op::rename || k == op::renameat || k == op::renameat2 ||
        (k == op::unlinkat && (c.e.flags & at_removedir))) {
      w_.mark_incomplete(incomplete_path_filter);
      kept_replaced_();
      kept_replaced_ = nullptr;  // once
    }
  }
  if (!kept_.empty() && !keeps(c)) {
    ++stats_.filtered;
    return;
  }
  c.e.thread = thread_of(c.t, static_cast<int32_t>(c.h.h.tid));
  if (c.e.result == -ENOENT || c.e.result == -ENOTDIR) {
    const auto skip = [this](path_id q) { return off_storage(q); };
    tree_.lookup_failed(c.e.path, c.e.ts, skip);
    tree_.lookup_failed(c.e.path2, c.e.ts, skip);
  }
  tree_.settle_pending(c.e.ts);
  w_.append(c.e);
}

// --path: an event naming paths or files is kept if one of them lies beneath a kept
// directory; one naming none (a process op, an fd the recorder could not place) always is. A
// process keeps its exec, without the path of a program from elsewhere.
bool decoder::keeps(syscall_ctx& c) {
  bool named = false;
  for (path_id p : {c.e.path, c.e.path2, c.fd_path, c.fd2_path}) {
    if (p == no_id) continue;
    if (inside(p)) return true;
    named = true;
  }
  if (info(c.e.kind).cls == op_class::process) {
    if (c.e.path != no_id && !inside(c.e.path)) c.e.path = no_id;
    return true;
  }
  return !named;
}

bool decoder::fd_op(syscall_ctx& c, int slot, int64_t fd) {
  const fd_ref r = fd_of(c.t.files, fd, c.it.ref[slot]);
  if (r.nonfile) {
    w_.add_nonfile(c.e.kind, r.kind);
    return false;
  }
  c.e.fd = static_cast<int32_t>(fd);
  c.e.file = r.file;
  c.fd_path = r.path;
  return true;
}

path_id decoder::path_arg(syscall_ctx& c, int slot) {
  const auto& name = c.it.str[slot];
  if (!name) return no_id;
  path_id base = top_of(c.t);
  if (name->empty() || name->front() != '/') {
    const uint8_t dirfd_arg = c.cap.dirfd[slot];
    const int dirfd = dirfd_arg ? static_cast<int>(c.h.args[dirfd_arg - 1]) : AT_FDCWD;
    if (dirfd == AT_FDCWD) {
      base = fds_.cwd(c.t.fs);
    } else if (const fd_entry* e = fds_.find(c.t.files, dirfd)) {
      base = e->path;
    } else {
      base = no_id;
    }
    if (base == no_id) {
      unresolved();
      base = top_of(c.t);
    }
  }
  return paths_.resolve(base, *name);
}

// What stat, lstat, newfstatat and statx reported: file id and state of the object. False if
// the object is a device node: not storage.
bool decoder::stat_result(syscall_ctx& c, path_id p, bool follows) {
  observed o;
  if (c.e.kind == op::statx) {
    struct statx sx;
    if (!user_prefix(c.it.user, sx, c.cap.user_len)) return true;
    o.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    o.ino = sx.stx_ino;
    o.mode = sx.stx_mode;
    o.size = sx.stx_size;
    o.blocks = sx.stx_blocks;
    o.uid = sx.stx_uid;
    o.gid = sx.stx_gid;
    o.nlink = sx.stx_nlink;
    o.atime_ns = ns(sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec);
    o.mtime_ns = ns(sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec);
    o.ctime_ns = ns(sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec);
    o.full = (sx.stx_mask & (STATX_BASIC_STATS)) == STATX_BASIC_STATS;
  } else {
    struct stat st;
    if (!user_prefix(c.it.user, st, c.cap.user_len)) return true;
    o.dev = st.st_dev;
    o.ino = st.st_ino;
    o.mode = st.st_mode;
    o.size = static_cast<uint64_t>(st.st_size);
    o.blocks = static_cast<uint64_t>(st.st_blocks);
    o.uid = st.st_uid;
    o.gid = st.st_gid;
    o.nlink = static_cast<uint32_t>(st.st_nlink);
    o.atime_ns = ns(st.st_atim.tv_sec, st.st_atim.tv_nsec);
    o.mtime_ns = ns(st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    o.ctime_ns = ns(st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    o.full = true;
  }
  if (S_ISCHR(o.mode) || S_ISBLK(o.mode)) {
    if (p != no_id) devices_.insert(p);
    return false;
  }
  if (c.e.file == no_id) c.e.file = file_of_stat(o.dev, o.ino, o.mode);
  o.file = c.e.file;
  if (p == no_id) return true;
  tree_.existed(p, &o);
  if (!follows) hold(p, {c.e.file, o.mode & S_IFMT});  // a followed name may be a link
  return true;
}

void decoder::decode_open(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  uint64_t flags = 0;
  switch (e.kind) {
    case op::open:
      flags = a[1], e.mode = static_cast<uint32_t>(a[2]);
      break;
    case op::openat:
      flags = a[2], e.mode = static_cast<uint32_t>(a[3]);
      break;
    case op::creat:
      flags = O_CREAT | O_WRONLY | O_TRUNC, e.mode = static_cast<uint32_t>(a[1]);
      break;
    default: {  // openat2: struct open_how
      uint64_t how[3] = {};
      if (user_as(c.it.user, how))
        flags = how[0], e.mode = static_cast<uint32_t>(how[1]), e.aux = how[2];
    }
  }
  if (e.kind != op::creat) e.flags = static_cast<uint32_t>(flags);
  const fsrr_file* f = c.it.file[2];
  if (e.result < 0 || !f || !f->file) {
    e.path = path_arg(c, 0);
    // ENXIO, ENODEV: only special files (a device with no driver, a FIFO with no reader).
    const bool special = e.result == -ENXIO || e.result == -ENODEV;
    if (special || off_storage(e.path)) return w_.add_nonfile(e.kind, fd_kind::other);
    if (e.result == -EEXIST) tree_.existed(e.path);
    return emit(c);
  }
  if (const auto kind = nonfile_kind(*f)) {
    if (S_ISCHR(f->mode) || S_ISBLK(f->mode)) devices_.insert(path_arg(c, 0));
    bind_nonfile(c.t.files, static_cast<int>(e.result), *f, *kind);
    return w_.add_nonfile(e.kind, *kind);
  }
  e.file = file_of(*f);
  const walk_view& walk = c.it.walk[2];
  e.path = walk_path(c.t, walk);
  if (e.path == no_id) e.path = path_arg(c, 0);
  if (f->f_mode & fmode_created) {
    tree_.created(e.path);
  } else if (!(walk.flags & FSRR_WALK_DELETED)) {
    const observed o = observe(*f, c.it.attr[2], e.file);
    tree_.existed(e.path, &o);
  }
  bind(c.t.files, static_cast<int>(e.result), *f, e.file, e.path, flags & O_CLOEXEC);
  emit(c);
}

// Offsets are worked out from where the fd stands after the call: it moved by the result.
void decoder::stream_op(syscall_ctx& c, int64_t fd) {
  event& e = c.e;
  if (e.result <= 0) return;
  const fd_entry* f = fds_.find(c.t.files, static_cast<int>(fd));
  const bool out = is_write(e.kind);
  const file_id stream = !f ? no_id : out ? f->stream_out : f->stream_in;
  if (stream == no_id) return;
  e.size = c.cap.kind == FSRR_K_IOV ? c.it.u64[0].value_or(0) : c.h.args[2];
  e.aux = static_cast<uint64_t>(e.kind);
  e.kind = out ? op::stream_write : op::stream_read;
  e.fd = static_cast<int32_t>(fd);
  e.file = stream;
  emit(c);
}

void decoder::decode_data(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  if (!fd_op(c, 0, static_cast<int64_t>(a[0]))) return stream_op(c, static_cast<int64_t>(a[0]));
  const fsrr_fdref* ref = c.it.ref[0];
  const int64_t moved = static_cast<int64_t>(c.moved());
  const bool vector = c.cap.kind == FSRR_K_IOV;
  e.size = vector ? c.it.u64[0].value_or(0) : a[2];
  if (vector) e.aux = a[2];
  const bool positioned = e.kind == op::pread64 || e.kind == op::pwrite64 || e.kind == op::preadv ||
                          e.kind == op::pwritev || e.kind == op::preadv2 || e.kind == op::pwritev2;
  e.offset = ref ? ref->pos - moved : 0;
  if (positioned && static_cast<int64_t>(a[3]) != -1) e.offset = static_cast<int64_t>(a[3]);
  // Linux appends even for pwrite
  bool append = is_write(e.kind) && ref && (ref->f_flags & O_APPEND);
  if (e.kind == op::preadv2 || e.kind == op::pwritev2) {
    e.flags = static_cast<uint32_t>(a[5]);
    if (e.flags & rwf_noappend) append = false;
    if (e.kind == op::pwritev2 && (e.flags & rwf_append)) append = true;
  }
  if (append && ref) e.offset = ref->size - moved;  // where the data went: the end at entry
  emit(c);
}

// Two fds: an event if either side is a file.
void decoder::decode_copy(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const bool sendfile = e.kind == op::sendfile;
  const int64_t fd0 = static_cast<int64_t>(a[0]),
                fd1 = static_cast<int64_t>(sendfile ? a[1] : a[2]);
  const fd_ref r0 = fd_of(c.t.files, fd0, c.it.ref[0]);
  const fd_ref r1 = fd_of(c.t.files, fd1, c.it.ref[1]);
  if (r0.nonfile && r1.nonfile) return w_.add_nonfile(e.kind, r0.kind);
  e.fd = static_cast<int32_t>(fd0);
  e.fd2 = static_cast<int32_t>(fd1);
  e.file = r0.file;
  e.file2 = r1.file;
  c.fd_path = r0.path;
  c.fd2_path = r1.path;
  // The offset a pointer held at entry (the call advanced it by what it moved); -1 for a
  // NULL pointer (the fd's own position was used).
  auto offset = [&](int slot) -> int64_t {
    if (!c.cap.loff[slot] || !a[c.cap.loff[slot] - 1]) return -1;
    const auto& after = c.it.u64[2 + slot];
    return after ? static_cast<int64_t>(*after - c.moved()) : 0;
  };
  if (sendfile) {  // fd: out, fd2: in; offset: where in was read
    e.offset = offset(1);
    e.size = a[3];
  } else {
    e.offset = offset(0);
    e.offset2 = offset(1);
    e.size = a[4];
    e.flags = static_cast<uint32_t>(a[5]);
  }
  emit(c);
}

void decoder::decode_fd_table(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const uint64_t files = c.t.files;
  if (e.kind == op::close_range) {
    e.fd = static_cast<int32_t>(a[0]);
    e.fd2 = static_cast<int32_t>(a[1]);
    e.flags = static_cast<uint32_t>(a[2]);
    if (e.result == 0) {
      if (e.flags & close_range_cloexec)
        fds_.cloexec_range(files, static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1]));
      else
        fds_.unbind_range(files, static_cast<uint32_t>(a[0]), static_cast<uint32_t>(a[1]));
    }
    return emit(c);
  }
  const int fd = static_cast<int>(a[0]);
  if (e.kind == op::close) {
    const bool file = fd_op(c, 0, fd);
    if (e.result != -EBADF) fds_.unbind(files, fd);
    if (file) emit(c);
    return;
  }
  const bool file = fd_op(c, 0, fd);
  bool dup = false, cloexec = false;
  switch (e.kind) {
    case op::dup:
      dup = true;
      break;
    case op::dup2:
      e.fd2 = static_cast<int32_t>(a[1]);
      dup = a[0] != a[1];
      break;
    case op::dup3:
      e.fd2 = static_cast<int32_t>(a[1]);
      e.flags = static_cast<uint32_t>(a[2]);
      dup = true;
      cloexec = e.flags & O_CLOEXEC;
      break;
    default:  // fcntl
      e.aux = static_cast<uint32_t>(a[1]);
      e.flags = static_cast<uint32_t>(a[2]);
      dup = e.aux == F_DUPFD || e.aux == F_DUPFD_CLOEXEC;
      cloexec = e.aux == F_DUPFD_CLOEXEC;
      if (e.aux == F_SETFD && e.result == 0) fds_.set_cloexec(files, fd, e.flags & FD_CLOEXEC);
  }
  if (dup && e.result >= 0) {
    const fsrr_fdref* made = c.it.ref[2];
    const fd_entry* from = fds_.find(files, fd);
    if (from && made && made->file == from->kfile) {  // the new fd shares the old one's file
      fd_entry copy = *from;
      copy.cloexec = cloexec;
      fds_.bind(files, static_cast<int>(e.result), copy);
    } else {
      fds_.unbind(files, static_cast<int>(e.result));  // dup2 over a known fd
    }
  }
  if (file) emit(c);
}

void decoder::decode_name(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const bool ok = e.result == 0;
  e.path = path_arg(c, 0);
  if (c.cap.path[1]) e.path2 = path_arg(c, 1);
  if (off_storage(e.path) || off_storage(e.path2)) return w_.add_nonfile(e.kind, fd_kind::other);
  // Names resolved earlier may now lead elsewhere, unless only a regular file moved.
  auto moved = [&](const held_file& f) {
    if (f.id == no_id || f.type != S_IFREG) paths_.forget_resolutions();
  };
  switch (e.kind) {
    case op::mkdir:
    case op::mkdirat:
    case op::mknod:
    case op::mknodat: {
      const int at = e.kind == op::mkdirat || e.kind == op::mknodat;
      e.mode = static_cast<uint32_t>(a[1 + at]);
      if (e.kind == op::mknod || e.kind == op::mknodat) e.aux = a[2 + at];
      if (ok) tree_.created(e.path);
      if (e.result == -EEXIST) tree_.existed(e.path);
      break;
    }
    case op::symlink:
    case op::symlinkat:
      if (c.it.str[2]) e.aux = w_.intern_string(*c.it.str[2]);
      if (ok) tree_.created(e.path);
      if (e.result == -EEXIST) tree_.existed(e.path);
      break;
    case op::rmdir:
    case op::unlink:
    case op::unlinkat: {
      if (e.kind == op::unlinkat) e.flags = static_cast<uint32_t>(a[2]);
      const bool dir = e.kind == op::rmdir || (e.flags & at_removedir);
      const held_file gone = held(e.path);
      e.file = gone.id;
      if (ok) {
        tree_.existed(e.path, nullptr, no_id, dir ? S_IFDIR : S_IFREG);
        hold(e.path, {});
        moved(dir ? held_file{} : gone);
      }
      break;
    }
    case op::rename:
    case op::renameat:
    case op::renameat2: {
      if (e.kind == op::renameat2) e.flags = static_cast<uint32_t>(a[4]);
      const held_file from = held(e.path);
      e.file = from.id;
      if (ok) {
        const held_file other = held(e.path2);
        tree_.existed(e.path, nullptr, e.path2);
        if (e.flags & rename_exchange) {
          tree_.existed(e.path2, nullptr, e.path);
          hold(e.path, other);
          moved(other);
        } else {
          tree_.created(e.path2);
          hold(e.path, {});
        }
        hold(e.path2, from);
        moved(from);
      }
      if (e.result == -EEXIST && (e.flags & rename_noreplace)) tree_.existed(e.path2);
      break;
    }
    default: {  // link, linkat
      if (e.kind == op::linkat) e.flags = static_cast<uint32_t>(a[4]);
      const held_file target = held(e.path);
      e.file = target.id;
      if (ok) {
        tree_.existed(e.path);
        tree_.created(e.path2);
        hold(e.path2, target);
      }
      if (e.result == -EEXIST) tree_.existed(e.path2);
    }
  }
  emit(c);
}

void decoder::decode_process(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const auto tid = static_cast<int32_t>(c.h.h.tid);
  switch (e.kind) {
    case op::chdir:
      e.path = path_arg(c, 0);
      if (off_storage(e.path)) return w_.add_nonfile(e.kind, fd_kind::other);
      if (e.result == 0) tree_.existed(e.path);
      break;
    case op::fchdir:
      if (!fd_op(c, 0, static_cast<int64_t>(a[0]))) return;
      break;
    case op::execve:
    case op::execveat:
      if (e.result == 0) {
        if (auto it = exec_path_.find(tid); it != exec_path_.end()) {
          e.path = it->second;
          exec_path_.erase(it);
        }
        e.aux = fds_.id_of(c.t.files);
      } else {
        e.path = path_arg(c, 0);
      }
      break;
    default: {  // clone, clone3, fork, vfork
      if (e.kind == op::clone) e.flags = static_cast<uint32_t>(a[0]);
      uint64_t flags = 0;
      if (e.kind == op::clone3 && user_as(c.it.user, flags)) e.flags = static_cast<uint32_t>(flags);
      if (e.result > 0) {
        if (auto it = child_files_.find({tid, static_cast<int32_t>(e.result)});
            it != child_files_.end()) {
          e.aux = fds_.id_of(it->second);
          child_files_.erase(it);
        }
      }
    }
  }
  emit(c);
}

// I/O that syscall tracing cannot see: recorded, and the trace says it is incomplete.
void decoder::decode_invisible(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  switch (e.kind) {
    case op::mmap: {
      if ((a[3] & MAP_ANONYMOUS) || static_cast<int>(a[4]) < 0)
        return w_.add_nonfile(e.kind, fd_kind::other);
      if (!fd_op(c, 0, static_cast<int>(a[4]))) return;
      e.offset = static_cast<int64_t>(a[5]);
      e.size = a[1];
      e.flags = static_cast<uint32_t>(a[3]);
      e.mode = static_cast<uint32_t>(a[2]);
      const uint32_t type = e.flags & 0x0f;  // MAP_TYPE
      const fsrr_fdref* f = c.it.ref[0];
      if (e.result >= 0 && (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) &&
          (e.mode & PROT_WRITE) && f && (f->f_flags & O_ACCMODE) != O_RDONLY)
        w_.mark_incomplete(incomplete_shared_mmap);
      break;
    }
    case op::msync:
      e.size = a[1];
      e.flags = static_cast<uint32_t>(a[2]);
      break;
    case op::io_setup:
    case op::io_submit:
      e.aux = e.kind == op::io_setup ? a[0] : a[1];
      w_.mark_incomplete(incomplete_aio);
      break;
    default:  // io_uring_setup, io_uring_enter
      if (e.kind == op::io_uring_enter) e.fd = static_cast<int32_t>(a[0]);
      e.aux = e.kind == op::io_uring_setup ? a[0] : a[1];
      w_.mark_incomplete(incomplete_io_uring);
  }
  emit(c);
}

// Everything else: one fd, or one path (which may stand for an fd: AT_EMPTY_PATH), plus
// op-specific fields.
void decoder::decode_other(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const bool by_fd = c.cap.fd[0] != 0;
  const bool fd_for_path = !by_fd && c.it.ref[0];
  if (by_fd || fd_for_path) {
    const int64_t fd = static_cast<int64_t>(a[by_fd ? c.cap.fd[0] - 1 : c.cap.dirfd[0] - 1]);
    if (!fd_op(c, 0, fd)) return;
    if (fd_for_path) e.path = c.fd_path;
  } else {
    e.path = path_arg(c, 0);
    if (off_storage(e.path)) return w_.add_nonfile(e.kind, fd_kind::other);
  }
  const bool path_op = !by_fd && !fd_for_path;
  const bool ok = e.result >= 0;
  auto name = [&] { return c.it.str[2] ? name_id(*c.it.str[2]) : no_id; };
  auto owner = [&](int i) { return a[i] << 32 | static_cast<uint32_t>(a[i + 1]); };
  switch (e.kind) {
    case op::lseek:
      e.offset = static_cast<int64_t>(a[1]), e.aux = a[2];
      break;
    case op::ioctl:
      e.aux = static_cast<uint32_t>(a[1]);
      if (e.aux == ficlone || e.aux == ficlonerange) {
        e.fd2 = static_cast<int32_t>(a[2]);
        int64_t range[4];
        if (e.aux == ficlonerange && user_as(c.it.user, range)) {
          e.fd2 = static_cast<int32_t>(range[0]);
          e.offset = range[1];
          e.size = static_cast<uint64_t>(range[2]);
          e.offset2 = range[3];
        }
        if (const fd_ref src = fd_of(c.t.files, e.fd2, c.it.ref[1]); !src.nonfile)
          e.file2 = src.file;
      }
      break;
    case op::fadvise64:
    case op::sync_file_range:
      e.offset = static_cast<int64_t>(a[1]), e.size = a[2], e.flags = static_cast<uint32_t>(a[3]);
      break;
    case op::readahead:
      e.offset = static_cast<int64_t>(a[1]), e.size = a[2];
      break;
    case op::getdents:
    case op::getdents64:
      e.size = a[2];
      if (e.result > 0) tree_.listed(c.fd_path, e.ts);
      break;
    case op::ftruncate:
    case op::truncate:
      e.size = a[1];
      break;
    case op::fallocate:
      e.flags = static_cast<uint32_t>(a[1]), e.offset = static_cast<int64_t>(a[2]), e.size = a[3];
      break;
    case op::flock:
      e.flags = static_cast<uint32_t>(a[1]);
      break;
    case op::stat:
    case op::lstat:
      if (ok && !stat_result(c, e.path, e.kind == op::stat))
        return w_.add_nonfile(e.kind, fd_kind::other);
      return emit(c);
    case op::newfstatat:
    case op::statx: {
      const bool sx = e.kind == op::statx;
      e.flags = static_cast<uint32_t>(a[sx ? 2 : 3]);
      if (sx) e.aux = static_cast<uint32_t>(a[3]);
      if (ok && path_op && !stat_result(c, e.path, !(e.flags & AT_SYMLINK_NOFOLLOW)))
        return w_.add_nonfile(e.kind, fd_kind::other);
      if (path_op) return emit(c);
      break;
    }
    case op::access:
    case op::chmod:
    case op::fchmod:
      e.mode = static_cast<uint32_t>(a[1]);
      break;
    case op::faccessat:
    case op::faccessat2:
    case op::fchmodat:
    case op::fchmodat2:
      e.mode = static_cast<uint32_t>(a[2]);
      if (e.kind == op::faccessat2 || e.kind == op::fchmodat2)
        e.flags = static_cast<uint32_t>(a[3]);
      break;
    case op::readlink:
      e.size = a[2];
      break;
    case op::readlinkat:
      e.size = a[3];
      break;
    case op::chown:
    case op::lchown:
    case op::fchown:
      e.aux = owner(1);
      break;
    case op::fchownat:
      e.aux = owner(2), e.flags = static_cast<uint32_t>(a[4]);
      break;
    case op::utime:
    case op::utimes:
    case op::futimesat:
    case op::utimensat:
      decode_times(e.kind, c.it.user, e);
      if (e.kind == op::utimensat) e.flags = static_cast<uint32_t>(a[3]);
      break;
    case op::setxattr:
    case op::lsetxattr:
    case op::fsetxattr:
      e.aux = name(), e.size = a[3], e.flags = static_cast<uint32_t>(a[4]);
      if (const auto& acl = c.it.u64[1]) e.mode = acl_mode_present | static_cast<uint32_t>(*acl);
      break;
    case op::getxattr:
    case op::lgetxattr:
    case op::fgetxattr:
      e.aux = name(), e.size = a[3];
      break;
    case op::listxattr:
    case op::llistxattr:
    case op::flistxattr:
      e.size = a[2];
      break;
    case op::removexattr:
    case op::lremovexattr:
    case op::fremovexattr:
      e.aux = name();
      break;
    case op::setxattrat:
    case op::getxattrat: {
      e.aux = name(), e.flags = static_cast<uint32_t>(a[2]);
      nr::xattr_args x;
      if (user_as(c.it.user, x)) e.size = x.size, e.flags |= x.flags;
      if (const auto& acl = c.it.u64[1]) e.mode = acl_mode_present | static_cast<uint32_t>(*acl);
      break;
    }
    case op::listxattrat:
      e.flags = static_cast<uint32_t>(a[2]), e.size = a[4];
      break;
    case op::removexattrat:
      e.aux = name(), e.flags = static_cast<uint32_t>(a[2]);
      break;
    case op::file_getattr:
    case op::file_setattr: {
      e.size = a[3], e.flags = static_cast<uint32_t>(a[4]);
      uint64_t xflags;  // the first field of struct file_attr
      if (e.kind == op::file_setattr && user_as(c.it.user, xflags)) e.aux = xflags;
      break;
    }
    default:
      break;
  }
  if (path_op) {
    if (const held_file h = held(e.path); h.id != no_id) e.file = h.id;
    if (ok) tree_.existed(e.path);
    // readlink's EINVAL: something that is not a symlink is there, most often a directory of
    // a realpath walk: looked at a second later, when its children are known.
    if (e.result == -EINVAL && (e.kind == op::readlink || e.kind == op::readlinkat))
      tree_.probably_dir(e.path, e.ts);
  }
  emit(c);
}

void decoder::decode(syscall_ctx& c) {
  switch (info(c.e.kind).cls) {
    case op_class::open:
      return decode_open(c);
    case op_class::read:
    case op_class::write:
      return decode_data(c);
    case op_class::copy:
      return decode_copy(c);
    case op_class::name:
      return decode_name(c);
    case op_class::process:
      return decode_process(c);
    case op_class::unreplayable:
      return decode_invisible(c);
    case op_class::close:
    case op_class::fd_table:
      return decode_fd_table(c);
    default:
      return decode_other(c);
  }
}

}  // namespace fsrr::recorder
