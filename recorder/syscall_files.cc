// Syscalls on open files: opens, reads and writes (and stream I/O on pipes and sockets),
// in-kernel copies.
#include "syscall_ctx.h"

namespace fsrr::recorder {

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
    if (S_ISCHR(f->mode) || S_ISBLK(f->mode)) not_storage_.insert(path_arg(c, 0));
    bind_nonfile(c.t.files, static_cast<int>(e.result), *f, *kind);
    return w_.add_nonfile(e.kind, *kind);
  }
  e.file = file_of(*f);
  const walk_view& walk = c.it.walk[2];
  e.path = walk_path(c.t, walk);
  if (e.path == no_id) e.path = path_arg(c, 0);
  if (shm_object(e.path, *f)) {
    not_storage_.insert(e.path);
    bind_nonfile(c.t.files, static_cast<int>(e.result), *f, fd_kind::other);
    return w_.add_nonfile(e.kind, fd_kind::other);
  }
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

}  // namespace fsrr::recorder
