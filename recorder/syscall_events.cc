// Each recorded syscall as a trace event: which argument lands in which event field
// (the conventions of format/ops.def), and what the call tells the fd tables and the
// initial tree. This file: the record's way in, the dispatch by op class, and what every
// family shares (fd arguments, stat results, what is kept and emitted); the families are
// syscall_files.cc (opens, data, copies), syscall_names.cc (the name ops),
// syscall_tasks.cc (fd tables, processes, what tracing cannot see) and syscall_attrs.cc
// (metadata, attributes, xattrs and the rest).
#include "syscall_ctx.h"

namespace fsrr::recorder {

void decoder::on_syscall(std::span<const uint8_t> record) {
  record_items it;
  const auto* h = parsed<fsrr_syscall>(record, it);
  if (!h) return;
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
  if (c.e.result == -ENOENT && ((c.it.str[0] && c.it.str[0]->empty()) ||
                                (c.it.str[1] && c.it.str[1]->empty()))) {
    // An empty name without AT_EMPTY_PATH: the kernel refuses it before it looks at any
    // file, and its path (the directory it is relative to) is one the call never reached.
    return w_.add_nonfile(c.e.kind, fd_kind::other);
  }
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
    // With two names, either may be the one missing; with one, it was.
    if (c.e.result == -ENOENT && c.e.path2 == no_id) tree_.absent(c.e.path);
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
    if (p != no_id) not_storage_.insert(p);
    return false;
  }
  // What a followed link reached on a pseudo file system: not storage either. (The link
  // itself is, for a stat that does not follow it.)
  if (follows && p != no_id && root_at(paths_.top(p)).mounts.pseudo_dev(o.dev)) return false;
  if (c.e.file == no_id) c.e.file = file_of_stat(o.dev, o.ino, o.mode);
  o.file = c.e.file;
  if (p == no_id) return true;
  tree_.existed(p, &o);
  if (!follows) hold(p, {c.e.file, o.mode & S_IFMT});  // a followed name may be a link
  return true;
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
