// SPDX-License-Identifier: GPL-2.0
/* fsrr's kernel side: one sys_enter and one sys_exit dispatcher driven by the recorder's
 * syscall table (targ_sc), the process-tree tracepoints, and an fd iterator for --pid.
 * Each syscall becomes one record at exit, carrying only what the recorder cannot know:
 * the arguments, the result, strings, and where each fd stands after the call. What an fd
 * refers to is sent once per thread (an FD record); entry only notes the time, and the file
 * a close releases. */
#include "vmlinux.h"  // first: the kernel's types, which the libbpf headers use

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "emit.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Who a task is: ids as the recorder and as the task sees them, name, root. */
static __always_inline void describe_task(struct task_struct* task, __u32* tid, __u32* pid,
                                          __u32* ppid, char* comm, struct fsrr_ids* ids,
                                          struct fsrr_root* root) {
  *tid = extract__host_tid(task);
  *pid = extract__host_tgid(task);
  *ppid = extract__host_tgid(task->real_parent);
  bpf_probe_read_kernel_str(comm, 16, task->comm);
  extract__ids(task, ids);
  extract__root(task, root);
}

#define SIGSTOP 19

#define SIGCONT 18

/* Stops the current process (the signal acts on its way back to user space, after this
 * syscall's record went in) and lists it in `paused` for the recorder, which continues it
 * once none of the reasons is left. The signal goes first: a recorder that continues the
 * process between the two either undoes it or finds the entry on its next pass.
 * Never stopped: the global init (it ignores SIGSTOP), and a process fsrr did not start that
 * has a terminal: it may be a job of an interactive shell, which would take the stop for
 * the user's and the terminal back. Those may lose events instead (counted). */
static __always_inline void pause_self(struct task_struct* task, struct task_state* s,
                                       __u32 reason) {
  struct fsrr_pause p = {.reasons = reason}, *old;
  __u32 tgid = extract__host_tgid(task);

  if (!tgid || task->tgid == 1) return;
  if (!(s->flags & TASK_SPAWNED) && task->signal->tty) return;
  if (bpf_send_signal(SIGSTOP)) return;
  p.since = bpf_ktime_get_ns();
  for (int tries = 0; tries < 2; tries++) { /* the recorder may delete it in between */
    if (!bpf_map_update_elem(&paused, &tgid, &p, BPF_NOEXIST)) {
      count(FSRR_C_PAUSED);
      if (reason == FSRR_PAUSE_BACKLOG) count(FSRR_C_PAUSES);
      return;
    }
    old = bpf_map_lookup_elem(&paused, &tgid);
    if (old) {
      __sync_fetch_and_or(&old->reasons, reason);
      return;
    }
  }
  bpf_send_signal(SIGCONT); /* the map is full: nobody would continue it */
}

/* The `roots` map's key for a root: without the device, which user space sees otherwise. */
static __always_inline bool root_held(const struct fsrr_root* r) {
  struct fsrr_root key = *r;

  key.dev = 0;
  key.pad = 0;
  return bpf_map_lookup_elem(&roots, &key) != NULL;
}

/* Sends an FSRR_REC_FD record: what fd refers to, with its path and inode state if it is a
 * file on storage. Returns 0 if it was lost, 1 if sent, 2 if sent for a file outside the
 * --path directories. A global function: the verifier checks it once, not at every call. */
__noinline int send_fd(__s64 fd, __u64 fptr, __u32 slot, __u64 ts) {
  struct task_struct* task = KPTR(task_struct, bpf_get_current_task_btf());
  bool outside = false;
  struct fsrr_file f;
  struct fsrr_fd* h;
  struct rec r;

  if (slot >= SLOT_COUNT || !rec__open(&r, slot, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_FD;
  h->h.flags = 0;
  h->h.ts = ts;
  h->files = (__u64)task->files;
  h->fd = fd;
  h->pad = 0;
  describe_task(task, &h->h.tid, &h->pid, &h->ppid, h->comm, &h->ids, &h->root);
  extract__file(fptr, &f);
  rec__file(&r, 0, &f);
  if (storage_file(&f)) {
    rec__attr(&r, 0, fptr);
    outside = walk__outside(rec__file_walk(&r, 0, fptr, (__u64)task));
  }
  return rec__send(&r) ? 1 + outside : 0;
}

static __always_inline struct fd_memo* memo_of(struct task_state* s, long fd) {
  return &s->seen[fd & (FSRR_FD_CACHE - 1)];
}

static __always_inline __u64 file_ino(__u64 fptr) {
  return fptr ? KPTR(file, fptr)->f_inode->i_ino : 0;
}

static __always_inline void note_fd(struct task_state* s, long fd, __u64 fptr, bool outside) {
  struct fd_memo* m = memo_of(s, fd);

  m->fd = fd;
  m->file = fptr;
  m->outside = outside;
  if (outside) m->ino = file_ino(fptr);
}

/* Whether this thread knows fd for a file outside the --path directories (and the struct file
 * has not been reused for another inode since, by another thread). */
static __always_inline bool fd_outside(struct task_state* s, long fd, __u64 fptr) {
  struct fd_memo* m = memo_of(s, fd);

  return fptr && m->fd == fd && m->file == fptr && m->outside && m->ino == file_ino(fptr);
}

/* The file behind fd; first described to the recorder if this thread has not done so
 * (fds inherited, opened before recording, passed in, or opened by another thread). */
static __always_inline __u64 describe_fd(struct task_struct* task, struct task_state* s, long fd,
                                         __u32 slot, __u64 ts) {
  __u64 fptr = extract__fd_file(task, fd);
  struct fd_memo* m = memo_of(s, fd);
  int sent;

  if (fptr && (m->fd != fd || m->file != fptr) && (sent = send_fd(fd, fptr, slot, ts)))
    note_fd(s, fd, fptr, sent == 2);
  return fptr;
}

static __always_inline void forget_fds(struct task_state* s) {
  __u32 i;

  for (i = 0; i < FSRR_FD_CACHE; i++) {
    s->seen[i].fd = 0;
    s->seen[i].file = 0;
    s->seen[i].outside = 0;
    s->seen[i].ino = 0;
  }
}

__noinline int send_cwd(struct task_state* s, __u64 ts) {
  struct task_struct* task = KPTR(task_struct, bpf_get_current_task_btf());
  struct fs_struct* fs = task->fs;
  struct fsrr_cwd* h;
  struct rec r;

  if (!s || !rec__open(&r, SLOT_SIDE, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_CWD;
  h->h.flags = 0;
  h->h.tid = extract__host_tid(task);
  h->h.ts = ts;
  h->fs = (__u64)fs;
  rec__walk(&r, 0, &fs->pwd, (__u64)task);
  if (rec__send(&r)) s->cwd_fs = (__u64)fs;
  return 0;
}

/* Tells the recorder who the task is, its tables and its root: first thing, and again when
 * its fd table, cwd or root was replaced (unshare, close_range(CLOSE_RANGE_UNSHARE), chroot,
 * setns, pivot_root). A root the recorder does not hold yet makes the process wait for it. */
__noinline int announce(struct task_state* s, __u64 ts) {
  struct task_struct* task = KPTR(task_struct, bpf_get_current_task_btf());
  struct fs_struct* fs = task->fs;
  struct fsrr_root root;
  struct fsrr_task* h;
  struct rec r;

  if (!s || !rec__open(&r, SLOT_SIDE, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_TASK;
  h->h.flags = 0;
  h->h.ts = ts;
  h->files = (__u64)task->files;
  h->fs = (__u64)fs;
  describe_task(task, &h->h.tid, &h->pid, &h->ppid, h->comm, &h->ids, &h->root);
  root = h->root;
  if (rec__send(&r)) {
    s->flags |= TASK_ANNOUNCED;
    s->files = h->files;
    s->fs = h->fs;
    s->root_mnt = fs ? (__u64)fs->root.mnt : 0;
    s->root_dentry = fs ? (__u64)fs->root.dentry : 0;
  }
  s->flags &= ~TASK_OWN_ROOT;
  if (root.mnt_id == targ_self_root_mnt && root.ino == targ_self_root_ino &&
      root.mnt_ns == targ_self_mnt_ns)
    s->flags |= TASK_OWN_ROOT;
  /* With --lossy nothing waits: the recorder looks the root up when it gets there. */
  if (targ_pause_bytes && root.mnt_ns && !root_held(&root))
    pause_self(task, s, FSRR_PAUSE_ROOT);
  return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(fsrr_sys_enter, struct pt_regs* ctx_regs, long id) {
  struct task_struct* cur = bpf_get_current_task_btf();
  bool compat = (cur->thread_info.status & FSRR_TS_COMPAT) || (id & FSRR_X32_SYSCALL_BIT);
  struct task_state* s;

  if (!compat && ((__u64)id >= FSRR_MAX_SYSCALLS || !targ_sc[id].record)) return 0;
  s = bpf_task_storage_get(&state, cur, 0, 0);
  if (!s) {
    if (!(targ_all || (targ_cgroup && bpf_current_task_under_cgroup(&cgroup_of, 0) == 1)) ||
        extract__host_tgid(KPTR(task_struct, cur)) == targ_self_tgid ||
        !extract__host_tid(KPTR(task_struct, cur)))
      return 0; /* not followed, the recorder, or a task outside its pid namespace */
    s = bpf_task_storage_get(&state, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!s) {
      count(FSRR_C_NOSTATE);
      return 0;
    }
  }
  if (compat || (__u64)id >= FSRR_MAX_SYSCALLS) {
    count(FSRR_C_COMPAT); /* ia32 numbers mean other calls: never decode them */
    return 0;
  }
  s->enter_ts = bpf_ktime_get_ns();
  s->in_flight = id + 1;
  if (targ_sc[id].kind == FSRR_K_EXEC) s->exec_tid = extract__host_tid(KPTR(task_struct, cur));
  if (targ_sc[id].flags & FSRR_SC_FD0_ENTER) /* close: the file is gone at exit */
    s->enter_file =
        describe_fd(KPTR(task_struct, cur), s, (int)extract__arg(KPTR(pt_regs, ctx_regs), 0),
                    SLOT_ENTER, s->enter_ts);
  return 0;
}

struct iov_ctx {
  __u64 iov;
  __u64 total;
};

static long iov__add(__u64 i, struct iov_ctx* c) {
  __u64 len = 0;

  if (bpf_probe_read_user(&len, sizeof(len), (void*)(c->iov + i * 16 + 8))) return 1;
  c->total += len;
  return 0;
}

/* io_submit's iocbs, from the array of pointers it was given, into the record being built
 * in SLOT_EXIT from byte `at` on. */
struct aio_ctx {
  __u64 array;
  __u32 at;
  __u32 n;
};

static long aio__iocb(__u64 i, struct aio_ctx* c) {
  __u8* buf = scratch_of(SLOT_EXIT);
  __u32 off = c->at + c->n * sizeof(struct fsrr_aio_iocb);
  __u64 ptr = 0;

  if (!buf || off + sizeof(struct fsrr_aio_iocb) > FSRR_SCRATCH_HALF) return 1;
  if (bpf_probe_read_user(&ptr, sizeof(ptr), (void*)(c->array + i * 8))) return 1;
  barrier_var(off); /* keep the mask: the verifier needs it on the register used */
  off &= FSRR_SCRATCH_HALF - 1;
  *(__u64*)(buf + off) = ptr;
  if (bpf_probe_read_user(buf + off + 8, 64, (void*)ptr)) return 1;
  c->n++;
  return 0;
}

/* A path argument: its string, and what the recorder needs to resolve it: the cwd for
 * names relative to AT_FDCWD, the dirfd otherwise (described if new), and for an empty name
 * (AT_EMPTY_PATH, utimensat(fd, NULL)) the dirfd's file as fd slot 0. Returns the name's
 * first byte, 0 if empty, -1 if none. */
static __always_inline int capture_path(struct rec* r, struct task_struct* task,
                                        struct task_state* s, const volatile struct fsrr_sc* sc,
                                        __u64* args, __u32 i, __u64 ts) {
  long dirfd = sc->dirfd[i] ? (int)arg_at(args, sc->dirfd[i]) : AT_FDCWD;
  __u64 fptr;
  int first;

  first = rec__user_str(r, i, arg_at(args, sc->path[i]), FSRR_PATH_MAX);
  if (first == '/') return first;
  if (dirfd == AT_FDCWD) {
    if (first > 0 && s->cwd_fs != (__u64)task->fs) send_cwd(s, ts);
    return first;
  }
  fptr = describe_fd(task, s, dirfd, SLOT_SIDE, ts);
  if (first <= 0) rec__fdref(r, 0, fptr);
  return first;
}

/* The less common parts of a syscall record, each a global function: verified once on its
 * own, they keep the verifier's work (and the programs' load time) small. Each continues
 * the record in the SLOT_EXIT scratch slot, whose header holds the arguments. */

/* names, strings, user structs and offsets behind pointers */
__noinline int exit_args(struct task_state* s, __u64 nr, __s64 ret, __u64 ts) {
  struct task_struct* task = KPTR(task_struct, bpf_get_current_task_btf());
  const volatile struct fsrr_sc* sc;
  struct fsrr_syscall* h;
  struct rec r;
  __u64 ptr, v;
  __u32 i, at, acl;
  int first = -1;

  if (!s || nr >= FSRR_MAX_SYSCALLS || !rec__resume(&r, SLOT_EXIT)) return 0;
  sc = &targ_sc[nr];
  h = (void*)r.buf;
  /* A successful open is described by the kernel's own path (rec__new_file): its name would
   * tell nothing more. */
  if (!(sc->kind == FSRR_K_OPEN && ret >= 0)) {
    if (sc->path[0]) first = capture_path(&r, task, s, sc, h->args, 0, ts);
    if (sc->path[1]) capture_path(&r, task, s, sc, h->args, 1, ts);
  }
  if (sc->str) {
    at = rec__len(&r);
    rec__user_str(&r, 2, arg_at(h->args, sc->str), FSRR_NAME_MAX);
    if ((sc->kind == FSRR_K_SETXATTR || sc->kind == FSRR_K_SETXATTRAT) &&
        rec__is_acl_name(&r, at)) {
      acl = sc->kind == FSRR_K_SETXATTR ? extract__acl_mode(h->args[2], h->args[3])
                                        : extract__acl_mode_at(h->args[4]);
      if (acl) rec__u64(&r, 1, acl & 0777);
    }
  }
  if (sc->user && (!(sc->flags & FSRR_SC_USER_OK) || ret == 0) &&
      (!(sc->flags & FSRR_SC_USER_PATH) || first > 0)) {
    v = sc->user_len;
    if (sc->flags & FSRR_SC_USER_RET) v = ret <= 0 ? 0 : (__u64)ret < v ? (__u64)ret : v;
    rec__user(&r, arg_at(h->args, sc->user), v);
  }
  for (i = 0; i < 2; i++) { /* as the call left them */
    ptr = arg_at(h->args, sc->loff[i]);
    if (ptr && !bpf_probe_read_user(&v, sizeof(v), (void*)ptr)) rec__u64(&r, 2 + i, v);
  }
  return 0;
}

/* The file a task maps shared at an address, and the offset there (msync). */
#define FSRR_VM_SHARED 8

struct fault_ctx {
  __u64 addr;
  __u64 file;
  __u64 offset;
};

static long fault__vma(struct task_struct* task, struct vm_area_struct* vma, struct fault_ctx* c) {
  if (!vma->vm_file || !(vma->vm_flags & FSRR_VM_SHARED)) return 0;
  c->file = (__u64)vma->vm_file;
  c->offset = ((c->addr - vma->vm_start) & ~4095ull) + ((__u64)vma->vm_pgoff << 12);
  return 0;
}

static const struct fsrr_shared_maps no_shared_maps; /* a process's table as it begins */

/* The shared_maps table. [start, end) is no longer what it was: mappings in it are cut to
 * what lies outside; one it would split in two is followed no more (counted: the trace says
 * so). Returns whether a followed mapping was there. */
static __always_inline bool shared_maps_cut(struct fsrr_shared_maps* t, __u64 start, __u64 end) {
  bool hit = false;

  for (int i = 0; i < FSRR_SHARED_MAPS; i++) {
    struct fsrr_shared_map* m = &t->m[i];

    if (!m->end || m->end <= start || m->start >= end) continue;
    hit = true;
    if (start <= m->start && end >= m->end) {
      m->end = 0;
    } else if (start <= m->start) {
      m->pgoff += (end - m->start) >> 12;
      m->start = end;
    } else if (end >= m->end) {
      m->end = start;
    } else {
      m->end = 0; /* a hole in the middle: the rest is not followed */
      count(FSRR_C_FAULT_MISSED);
    }
  }
  return hit;
}

/* After a successful mmap, munmap or mremap of the current process. */
static __always_inline void shared_maps_update(struct task_struct* task, __u32 kind,
                                               const __u64* args, long ret, __u64 fptr) {
  __u32 tgid = extract__host_tgid(task);
  struct fsrr_shared_maps* t = bpf_map_lookup_elem(&shared_maps, &tgid);
  __u64 len = (args[1] + 4095) & ~4095ull;
  struct inode* inode;

  if (kind == FSRR_K_MUNMAP) {
    if (!t) return;
    if (ret) return; /* munmap failed; mremap's ret is an address */
    shared_maps_cut(t, args[0], args[0] + len);
    return;
  }
  if ((__u64)ret >= (__u64)-4095) return; /* failed */
  if (t) shared_maps_cut(t, ret, ret + len);
  if ((args[3] & 0xf) != 1 && (args[3] & 0xf) != 3) return; /* MAP_SHARED(_VALIDATE) */
  if (!(args[2] & 2) || (args[3] & MAP_ANONYMOUS) || !fptr) return; /* PROT_WRITE, a file */
  inode = KPTR(file, fptr)->f_inode;
  if (!inode || !mode_has_path(inode->i_mode) || pseudo_fs(inode->i_sb->s_magic)) return;
  if (!t) {
    bpf_map_update_elem(&shared_maps, &tgid, &no_shared_maps, BPF_NOEXIST);
    t = bpf_map_lookup_elem(&shared_maps, &tgid);
    if (!t) {
      count(FSRR_C_FAULT_MISSED);
      return;
    }
  }
  for (int i = 0; i < FSRR_SHARED_MAPS; i++) {
    struct fsrr_shared_map* m = &t->m[i];

    if (m->end) continue;
    m->start = ret;
    m->end = ret + len;
    m->file = fptr;
    m->pgoff = args[5] >> 12;
    return;
  }
  count(FSRR_C_FAULT_MISSED); /* more than the table holds */
}

/* mremap(old, old_len, new_len, ...): the old range is gone; a followed mapping moved or
 * resized is followed no more (counted: the trace says so). */
static __always_inline void shared_maps_moved(struct task_struct* task, const __u64* args,
                                              long ret) {
  __u32 tgid = extract__host_tgid(task);
  struct fsrr_shared_maps* t = bpf_map_lookup_elem(&shared_maps, &tgid);
  __u64 old_len = (args[1] + 4095) & ~4095ull, new_len = (args[2] + 4095) & ~4095ull;

  if (!t || (__u64)ret >= (__u64)-4095) return;
  if (shared_maps_cut(t, args[0], args[0] + old_len)) count(FSRR_C_FAULT_MISSED);
  shared_maps_cut(t, ret, ret + new_len);
}

/* what the call made: a new file, a new cwd, an iovec total */
__noinline int exit_result(struct task_state* s, __u64 nr, __s64 ret, __u64 ts) {
  struct task_struct* task = KPTR(task_struct, bpf_get_current_task_btf());
  const volatile struct fsrr_sc* sc;
  struct fsrr_syscall* h;
  struct rec r;
  __u64 fptr;

  if (!s || nr >= FSRR_MAX_SYSCALLS || !rec__resume(&r, SLOT_EXIT)) return 0;
  sc = &targ_sc[nr];
  h = (void*)r.buf;
  switch (sc->kind) {
    case FSRR_K_OPEN:
      if (ret < 0) break;
      fptr = extract__fd_file(task, ret);
      note_fd(s, ret, fptr, rec__new_file(&r, 2, fptr));
      break;
    case FSRR_K_IOV: {
      struct iov_ctx c = {.iov = h->args[1]};

      bpf_loop(h->args[2] > 1024 ? 1024 : h->args[2], iov__add, &c, 0);
      rec__u64(&r, 0, c.total);
      break;
    }
    case FSRR_K_CHDIR:
      if (ret == 0) send_cwd(s, ts);
      break;
    case FSRR_K_AIO_SUBMIT: {
      struct aio_ctx c = {.array = h->args[2]};
      __u32 p = rec__item(&r, FSRR_I_AIO, 0, FSRR_AIO_MAX * sizeof(struct fsrr_aio_iocb));

      if (!p || ret <= 0) break;
      c.at = p;
      bpf_loop(ret > FSRR_AIO_MAX ? FSRR_AIO_MAX : ret, aio__iocb, &c, 0);
      rec__commit(&r, p, c.n * sizeof(struct fsrr_aio_iocb), 0);
      break;
    }
    case FSRR_K_MSYNC: {
      struct fault_ctx c = {.addr = h->args[0]};

      if (!bpf_find_vma(bpf_get_current_task_btf(), h->args[0], fault__vma, &c, 0) && c.file)
        rec__fdptr(&r, 0, c.file);
      break;
    }
    case FSRR_K_AIO_EVENTS: {
      __u64 len = ret <= 0 ? 0 : ret > FSRR_AIO_MAX ? FSRR_AIO_MAX * 32 : ret * 32;
      __u32 p = rec__item(&r, FSRR_I_AIO, 1, FSRR_AIO_MAX * 32);

      if (!p || !len) break;
      barrier_var(len);
      if (len > FSRR_AIO_MAX * 32) break;
      if (bpf_probe_read_user(r.buf + (p & (FSRR_SCRATCH_HALF - 1)), len, (void*)h->args[3])) {
        rec__set_len(&r, p - sizeof(struct fsrr_item));
        break;
      }
      rec__commit(&r, p, len, 0);
      break;
    }
  }
  return 0;
}

/* Whether exit_args has anything to add. */
static __always_inline bool has_args(const volatile struct fsrr_sc* sc, const __u64* args,
                                     long ret) {
  return (sc->path[0] && !(sc->kind == FSRR_K_OPEN && ret >= 0)) || sc->str || sc->user ||
         arg_at(args, sc->loff[0]) || arg_at(args, sc->loff[1]);
}

/* Backpressure: a process that finds the ring buffer filling up stops and waits for the
 * recorder to drain and continue it, instead of losing its events. Each pause is counted
 * once per process; the headroom above targ_pause_bytes takes what the threads already in a
 * syscall still send. */
static __always_inline void pause_if_full(struct task_struct* task, struct task_state* s) {
  if (targ_pause_bytes && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= targ_pause_bytes)
    pause_self(task, s, FSRR_PAUSE_BACKLOG);
}

/* Whether the in-kernel --path filter applies to this task now. */
static __always_inline bool path_filter_on(struct task_state* s) {
  __u32 zero = 0, *on;

  if (!targ_npaths || !(s->flags & TASK_OWN_ROOT)) return false;
  on = bpf_map_lookup_elem(&path_filter, &zero);
  return on && *on;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(fsrr_sys_exit, struct pt_regs* ctx_regs, long ret) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct task_struct* task = KPTR(task_struct, cur);
  struct pt_regs* regs = KPTR(pt_regs, ctx_regs);
  const volatile struct fsrr_sc* sc;
  struct fsrr_syscall* h;
  struct fs_struct* fs;
  struct task_state* s;
  struct rec r;
  __u64 ts, fptr, v;
  __u32 nr, i;
  bool outside, some_fd = false;

  nr = regs->orig_ax;
  if (nr >= FSRR_MAX_SYSCALLS || !targ_sc[nr].record)
    return 0; /* cheap for the syscalls nobody records (orig_ax is -1 for none) */
  s = bpf_task_storage_get(&state, cur, 0, 0);
  if (!s || !s->in_flight) return 0; /* untraced, or entered before tracing began */
  nr = s->in_flight - 1;
  s->in_flight = 0;
  if (nr >= FSRR_MAX_SYSCALLS) return 0;
  sc = &targ_sc[nr];
  ts = s->enter_ts;
  if (sc->kind == FSRR_K_MUNMAP) { /* the shared mappings' table only: nothing is sent */
    __u64 args[6];

    extract__args(regs, args);
    if (nr == 25) /* mremap */
      shared_maps_moved(task, args, ret);
    else
      shared_maps_update(task, FSRR_K_MUNMAP, args, ret, 0);
    return 0;
  }
  fs = task->fs;
  if (!(s->flags & TASK_ANNOUNCED) || s->files != (__u64)task->files || s->fs != (__u64)fs ||
      (fs && (s->root_mnt != (__u64)fs->root.mnt || s->root_dentry != (__u64)fs->root.dentry)))
    announce(s, ts);
  if (!rec__open(&r, SLOT_EXIT, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_SYSCALL;
  h->h.flags = 0;
  h->h.tid = extract__host_tid(task);
  h->h.ts = ts;
  h->dur = bpf_ktime_get_ns() - ts;
  h->ret = ret;
  extract__args(regs, h->args);
  h->nr = nr;
  h->pad[0] = h->pad[1] = h->pad[2] = 0;

  /* --path: a call on fds alone, every one a file outside the directories, is not sent (ops
   * naming paths, and opens, are: the recorder filters them once it resolved the names). */
  outside = !sc->path[0] && !sc->path[1] &&
            (sc->kind == FSRR_K_PLAIN || sc->kind == FSRR_K_IOV || sc->kind == FSRR_K_CLOSE ||
             sc->kind == FSRR_K_MMAP) &&
            path_filter_on(s);
  /* fd arguments, as they stand after the call */
  for (i = 0; i < 2; i++) {
    if (!sc->fd[i]) continue;
    if (i == 0 && (sc->flags & FSRR_SC_FD0_ENTER)) {
      rec__fdptr(&r, 0, s->enter_file); /* closed by now: its address is all there is */
      some_fd = true;
      outside = outside && fd_outside(s, (int)h->args[0], s->enter_file);
      continue;
    }
    if (sc->kind == FSRR_K_MMAP && ((h->args[3] & MAP_ANONYMOUS) || (long)h->args[4] < 0)) continue;
    v = (int)arg_at(h->args, sc->fd[i]);
    fptr = describe_fd(task, s, v, SLOT_SIDE, ts);
    rec__fdref(&r, i, fptr);
    some_fd = true;
    outside = outside && fd_outside(s, v, fptr);
  }
  if (sc->kind == FSRR_K_IOCTL && (h->args[1] == FSRR_FICLONE || h->args[1] == FSRR_FICLONERANGE)) {
    v = h->args[2];
    if (h->args[1] == FSRR_FICLONERANGE) {
      rec__user(&r, h->args[2], 32);
      v = 0;
      bpf_probe_read_user(&v, sizeof(v), (void*)h->args[2]);
    }
    rec__fdref(&r, 1, describe_fd(task, s, (int)v, SLOT_SIDE, ts));
  }

  if (sc->kind == FSRR_K_MMAP)
    shared_maps_update(task, FSRR_K_MMAP, h->args, ret,
                       (h->args[3] & MAP_ANONYMOUS) || (long)h->args[4] < 0
                           ? 0
                           : extract__fd_file(task, (int)h->args[4]));
  if (has_args(sc, h->args, ret)) exit_args(s, nr, ret, ts);

  switch (sc->kind) {
    case FSRR_K_OPEN:
    case FSRR_K_IOV:
    case FSRR_K_CHDIR:
    case FSRR_K_AIO_SUBMIT:
    case FSRR_K_AIO_EVENTS:
    case FSRR_K_MSYNC:
      exit_result(s, nr, ret, ts);
      break;
    case FSRR_K_FCNTL:
      if (h->args[1] != F_DUPFD && h->args[1] != F_DUPFD_CLOEXEC) break;
      /* fall through */
    case FSRR_K_DUP:
      if (ret < 0) break;
      fptr = extract__fd_file(task, ret);
      rec__fdptr(&r, 2, fptr);
      note_fd(s, ret, fptr, fd_outside(s, (int)h->args[0], fptr));
      break;
    case FSRR_K_CLOSE:
      if (ret == -EBADF) break; /* any other error still closed the fd */
      if (sc->fd[0])
        note_fd(s, h->args[0], 0, false);
      else
        forget_fds(s); /* close_range */
      break;
  }
  if (outside && some_fd)
    count(FSRR_C_FILTERED);
  else
    rec__send(&r);
  pause_if_full(task, s);
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fsrr_fork, struct task_struct* tparent, struct task_struct* tchild) {
  struct task_struct* parent = KPTR(task_struct, tparent);
  struct task_struct* child = KPTR(task_struct, tchild);
  struct task_state *ps, *cs;
  struct fsrr_fork* h;
  struct rec r;
  __u32 i;

  ps = bpf_task_storage_get(&state, tparent, 0, 0);
  if (extract__host_tgid(child) != extract__host_tgid(parent)) { /* a process: its mappings */
    __u32 ptgid = extract__host_tgid(parent), ctgid = extract__host_tgid(child);
    struct fsrr_shared_maps* pm = ps ? bpf_map_lookup_elem(&shared_maps, &ptgid) : 0;

    if (pm)
      bpf_map_update_elem(&shared_maps, &ctgid, pm, BPF_ANY);
    else if (bpf_map_lookup_elem(&shared_maps, &ctgid)) /* a reused tgid's */
      bpf_map_delete_elem(&shared_maps, &ctgid);
  }
  if (!ps && (!targ_all || extract__host_tgid(parent) == targ_self_tgid ||
              !extract__host_tid(child)))
    return 0;
  cs = bpf_task_storage_get(&state, tchild, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!cs) {
    count(FSRR_C_NOSTATE);
    return 0;
  }
  if (ps) { /* the child's fd table is (a copy of) the parent's */
    for (i = 0; i < FSRR_FD_CACHE; i++) cs->seen[i] = ps->seen[i];
    cs->flags |= ps->flags & (TASK_SPAWNED | TASK_OWN_ROOT);
  }
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_FORK;
  h->h.flags = 0;
  h->h.ts = bpf_ktime_get_ns();
  h->parent_files = (__u64)parent->files;
  h->parent_fs = (__u64)parent->fs;
  h->files = (__u64)child->files;
  h->fs = (__u64)child->fs;
  describe_task(child, &h->h.tid, &h->pid, &h->parent_pid, h->comm, &h->ids, &h->root);
  h->parent_tid = extract__host_tid(parent);
  h->parent_pid = extract__host_tgid(parent); /* the forking process, for CLONE_THREAD too */
  h->tid_for_parent =
      extract__pid_nr(child->thread_pid, parent->thread_pid ? parent->thread_pid->level : 0, 0);
  if (rec__send(&r)) {
    cs->flags |= TASK_ANNOUNCED;
    cs->files = h->files;
    cs->fs = h->fs;
    /* A root the recorder does not hold (clone(CLONE_NEWNS)): announced again, and waited
     * for, at the child's first syscall. */
    if (root_held(&h->root) && child->fs) {
      cs->root_mnt = (__u64)child->fs->root.mnt;
      cs->root_dentry = (__u64)child->fs->root.dentry;
    }
  }
  return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(fsrr_exec, struct task_struct* tp, pid_t old_pid, struct linux_binprm* tbprm) {
  struct task_state* s = bpf_task_storage_get(&state, tp, 0, 0);
  struct task_struct* p = KPTR(task_struct, tp);
  struct linux_binprm* bprm = KPTR(linux_binprm, tbprm);
  struct fsrr_exec* h;
  struct rec r;

  if (!s) return 0;
  forget_fds(s); /* close-on-exec and unshared tables */
  {
    __u32 tgid = extract__host_tgid(p);

    bpf_map_delete_elem(&shared_maps, &tgid); /* a new address space */
  }
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_EXEC;
  h->h.flags = 0;
  h->h.tid = extract__host_tid(p);
  h->h.ts = bpf_ktime_get_ns();
  h->files = (__u64)p->files;
  h->pid = extract__host_tgid(p);
  /* old_pid is in the initial namespace: the recorder's only when it runs there */
  h->old_tid = targ_pidns_level ? (s->exec_tid ? s->exec_tid : h->h.tid) : old_pid;
  bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), p->comm);
  extract__ids(p, &h->ids);
  rec__file_walk(&r, 0, (__u64)bprm->file, (__u64)p);
  if (rec__send(&r)) {
    s->flags |= TASK_ANNOUNCED;
    s->files = h->files;
  }
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fsrr_exit, struct task_struct* tp) {
  struct task_struct* p = KPTR(task_struct, tp);
  struct files_struct* files;
  struct fs_struct* fs;
  struct fsrr_exit* h;
  struct rec r;

  if (p->signal && !p->signal->live.counter) { /* its last thread: its mappings go with it */
    __u32 tgid = extract__host_tgid(p);

    if (bpf_map_lookup_elem(&shared_maps, &tgid)) bpf_map_delete_elem(&shared_maps, &tgid);
  }
  if (!bpf_task_storage_get(&state, tp, 0, 0)) return 0;
  files = p->files;
  fs = p->fs;
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_EXIT;
  h->h.flags = 0;
  if (files && files->count.counter == 1) h->h.flags |= FSRR_EXIT_LAST_FILES;
  if (fs && fs->users == 1) h->h.flags |= FSRR_EXIT_LAST_FS;
  h->h.tid = extract__host_tid(p);
  h->h.ts = bpf_ktime_get_ns();
  h->files = (__u64)files;
  h->fs = (__u64)fs;
  h->pid = extract__host_tgid(p);
  h->code = p->exit_code;
  rec__send(&r);
  return 0;
}

/* io_uring: each request of a traced task is noted as it is submitted (by the task, or by
 * its SQPOLL thread) and sent as one record when it completes, wherever that happens (inline,
 * an io-wq worker, task work). The opcodes are the UAPI's; only their arguments are read from
 * the kernel's per-opcode command data, whose layouts CO-RE relocates. */
#define PF_IO_WORKER 0x00000010
#define FSRR_IORING_OP_READV 1
#define FSRR_IORING_OP_WRITEV 2
#define FSRR_IORING_OP_FSYNC 3
#define FSRR_IORING_OP_READ_FIXED 4
#define FSRR_IORING_OP_WRITE_FIXED 5
#define FSRR_IORING_OP_SYNC_FILE_RANGE 8
#define FSRR_IORING_OP_FALLOCATE 17
#define FSRR_IORING_OP_READ 22
#define FSRR_IORING_OP_WRITE 23
#define FSRR_IORING_OP_OPENAT 18
#define FSRR_IORING_OP_CLOSE 19
#define FSRR_IORING_OP_STATX 21
#define FSRR_IORING_OP_FADVISE 24
#define FSRR_IORING_OP_OPENAT2 28
#define FSRR_IORING_OP_RENAMEAT 35
#define FSRR_IORING_OP_UNLINKAT 36
#define FSRR_IORING_OP_MKDIRAT 37
#define FSRR_IORING_OP_SYMLINKAT 38
#define FSRR_IORING_OP_LINKAT 39
#define FSRR_IORING_OP_FTRUNCATE 55
#define FSRR_IORING_OP_READV_FIXED 60
#define FSRR_IORING_OP_WRITEV_FIXED 61

static __always_inline __u64 filename_of(struct filename* f) {
  return f ? (__u64)BPF_CORE_READ(f, name) : 0;
}

/* The names a request on names was submitted with, read from the kernel's copies. */
static __always_inline void uring_names(const struct fsrr_uring_sub* sub, __u64 name0, __u64 name1) {
  struct fsrr_uring_names* h;
  struct rec r;

  if (!rec__open(&r, SLOT_URING_SUB, sizeof(*h))) return;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_URING_NAMES;
  h->h.flags = 0;
  h->h.tid = sub->tid;
  h->h.ts = sub->ts;
  h->ring = sub->ring;
  rec__kernel_str(&r, 0, name0);
  rec__kernel_str(&r, 1, name1);
  rec__send(&r);
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(fsrr_uring_submit, struct io_kiocb* req) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct task_struct* owner = cur;
  struct fsrr_uring_sub sub = {};
  void* cmd = (void*)req; /* the command data begins with the file, at the request's start */
  struct io_rw* rw = cmd;
  struct io_sync* sync = cmd;
  struct io_fadvise* fadv = cmd;
  struct io_ftrunc* ftrunc = cmd;
  struct io_open* open = cmd;
  struct io_statx* statx = cmd;
  struct io_rename* rename = cmd;
  struct io_unlink* unlink = cmd;
  struct io_mkdir* mkdir = cmd;
  struct io_link* link = cmd;
  struct io_close* close = cmd;
  __u64 key = (__u64)req, name0 = 0, name1 = 0;

  if (!bpf_task_storage_get(&state, cur, 0, 0)) {
    owner = cur->flags & PF_IO_WORKER ? cur->group_leader : 0; /* an SQPOLL thread's process */
    if (!owner || !bpf_task_storage_get(&state, owner, 0, 0)) {
      /* requests come from one slab: a traced one whose completion was never seen must not
       * lend its entry to this one */
      bpf_map_delete_elem(&uring_inflight, &key);
      return 0;
    }
    sub.sqpoll = 1;
  }
  if (req->flags & (1ull << 6)) { /* REQ_F_CQE_SKIP: no completion will say what it did */
    count(FSRR_C_URING_FULL);
    return 0;
  }
  sub.ts = bpf_ktime_get_ns();
  sub.tid = extract__host_tid(KPTR(task_struct, owner));
  sub.files = (__u64)KPTR(task_struct, owner)->files;
  sub.opcode = req->opcode;
  sub.ring = (__u64)req->ctx;
  sub.flags = req->flags;
  sub.user_data = req->cqe.user_data;
  sub.fd = req->cqe.fd;
  sub.off = -1;
  switch (sub.opcode) {
    case FSRR_IORING_OP_READV:
    case FSRR_IORING_OP_WRITEV:
    case FSRR_IORING_OP_READ_FIXED:
    case FSRR_IORING_OP_WRITE_FIXED:
    case FSRR_IORING_OP_READ:
    case FSRR_IORING_OP_WRITE:
    case FSRR_IORING_OP_READV_FIXED:
    case FSRR_IORING_OP_WRITEV_FIXED:
      sub.off = BPF_CORE_READ(rw, kiocb.ki_pos);
      sub.len = BPF_CORE_READ(rw, len);
      sub.op_flags = BPF_CORE_READ(rw, flags);
      break;
    case FSRR_IORING_OP_FSYNC:
    case FSRR_IORING_OP_SYNC_FILE_RANGE:
    case FSRR_IORING_OP_FALLOCATE:
      sub.off = BPF_CORE_READ(sync, off);
      sub.len = BPF_CORE_READ(sync, len);
      sub.op_flags = sub.opcode == FSRR_IORING_OP_FALLOCATE ? BPF_CORE_READ(sync, mode)
                                                            : BPF_CORE_READ(sync, flags);
      break;
    case FSRR_IORING_OP_FADVISE:
      sub.off = BPF_CORE_READ(fadv, offset);
      sub.len = BPF_CORE_READ(fadv, len);
      sub.op_flags = BPF_CORE_READ(fadv, advice);
      break;
    case FSRR_IORING_OP_FTRUNCATE:
      sub.len = BPF_CORE_READ(ftrunc, len);
      break;
    case FSRR_IORING_OP_OPENAT:
    case FSRR_IORING_OP_OPENAT2:
      sub.fd = BPF_CORE_READ(open, dfd);
      sub.op_flags = (__u32)BPF_CORE_READ(open, how.flags);
      sub.len = BPF_CORE_READ(open, how.mode);
      sub.aux = BPF_CORE_READ(open, how.resolve) | (__u64)BPF_CORE_READ(open, file_slot) << 32;
      name0 = filename_of(BPF_CORE_READ(open, filename));
      break;
    case FSRR_IORING_OP_STATX:
      sub.fd = BPF_CORE_READ(statx, dfd);
      sub.op_flags = BPF_CORE_READ(statx, flags);
      sub.len = BPF_CORE_READ(statx, mask);
      sub.aux = (__u64)BPF_CORE_READ(statx, buffer);
      name0 = filename_of(BPF_CORE_READ(statx, filename));
      break;
    case FSRR_IORING_OP_RENAMEAT:
      sub.fd = BPF_CORE_READ(rename, old_dfd);
      sub.off = BPF_CORE_READ(rename, new_dfd);
      sub.op_flags = BPF_CORE_READ(rename, flags);
      name0 = filename_of(BPF_CORE_READ(rename, oldpath));
      name1 = filename_of(BPF_CORE_READ(rename, newpath));
      break;
    case FSRR_IORING_OP_UNLINKAT:
      sub.fd = BPF_CORE_READ(unlink, dfd);
      sub.op_flags = BPF_CORE_READ(unlink, flags);
      name0 = filename_of(BPF_CORE_READ(unlink, filename));
      break;
    case FSRR_IORING_OP_MKDIRAT:
      sub.fd = BPF_CORE_READ(mkdir, dfd);
      sub.len = BPF_CORE_READ(mkdir, mode);
      name0 = filename_of(BPF_CORE_READ(mkdir, filename));
      break;
    case FSRR_IORING_OP_SYMLINKAT: /* oldpath: the target; newpath at new_dfd: the link */
      sub.off = BPF_CORE_READ(link, new_dfd);
      name0 = filename_of(BPF_CORE_READ(link, newpath));
      name1 = filename_of(BPF_CORE_READ(link, oldpath));
      break;
    case FSRR_IORING_OP_LINKAT:
      sub.fd = BPF_CORE_READ(link, old_dfd);
      sub.off = BPF_CORE_READ(link, new_dfd);
      sub.op_flags = BPF_CORE_READ(link, flags);
      name0 = filename_of(BPF_CORE_READ(link, oldpath));
      name1 = filename_of(BPF_CORE_READ(link, newpath));
      break;
    case FSRR_IORING_OP_CLOSE:
      sub.fd = BPF_CORE_READ(close, fd);
      sub.aux = BPF_CORE_READ(close, file_slot);
      break;
  }
  if (bpf_map_update_elem(&uring_inflight, &key, &sub, BPF_ANY)) {
    count(FSRR_C_URING_FULL);
    return 0;
  }
  if (name0) {
    /* What a relative name needs to be resolved: the cwd, or its dirfd described */
    struct task_state* s = bpf_task_storage_get(&state, owner, 0, 0);
    struct task_struct* task = KPTR(task_struct, owner);
    char first[2] = {};

    for (int i = 0; i < 2; i++) {
      long dfd = i ? (int)sub.off : sub.fd;
      __u64 name = i ? name1 : name0;

      if (!name || (i && sub.opcode == FSRR_IORING_OP_SYMLINKAT)) continue; /* a target */
      if (i == 0 && sub.opcode == FSRR_IORING_OP_SYMLINKAT) dfd = (int)sub.off;
      bpf_probe_read_kernel(first, 1, (void*)name);
      if (first[0] == '/' || !first[0] || !s) continue;
      if (dfd == AT_FDCWD) {
        if (s->cwd_fs != (__u64)task->fs) send_cwd(s, sub.ts);
      } else {
        describe_fd(task, s, dfd, SLOT_SIDE, sub.ts);
      }
    }
    uring_names(&sub, name0, name1);
  }
  return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(fsrr_uring_complete, struct io_ring_ctx* ring, void* req, struct io_uring_cqe* cqe) {
  struct task_struct* cur = bpf_get_current_task_btf();
  __u64 key = (__u64)req, fptr = 0, now = bpf_ktime_get_ns(), *walked;
  bool described = false;
  struct fsrr_uring_sub* sub;
  struct fsrr_uring* h;
  struct fsrr_file f;
  struct rec r;

  if (!req || !cqe) return 0;
  sub = bpf_map_lookup_elem(&uring_inflight, &key);
  if (!sub) return 0;
  if (sub->ring != (__u64)ring || sub->user_data != cqe->user_data) goto done; /* not that one */
  if (!rec__open(&r, SLOT_URING, sizeof(*h))) goto done;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_URING;
  h->h.flags = 0;
  h->h.tid = sub->tid;
  h->h.ts = sub->ts;
  h->sub = *sub;
  h->dur = now - sub->ts;
  h->res = cqe->res;
  h->cqe_flags = cqe->flags;
  h->done_tid = extract__host_tid(KPTR(task_struct, cur));
  bpf_probe_read_kernel(&fptr, sizeof(fptr), req); /* io_kiocb.file, first of its members */
  if ((sub->opcode == FSRR_IORING_OP_OPENAT || sub->opcode == FSRR_IORING_OP_OPENAT2) &&
      cqe->res >= 0 && !(sub->aux >> 32)) {
    /* the file it opened, in the submitter's fd table (io-wq workers and the SQ thread
     * share it) */
    fptr = extract__fd_file(cur, cqe->res);
    if (fptr) rec__new_file(&r, 2, fptr);
    fptr = 0;
  } else if (sub->opcode == FSRR_IORING_OP_STATX && cqe->res == 0) {
    rec__user(&r, sub->aux, sizeof(struct statx));
  }
  if (fptr) {
    extract__file(fptr, &f);
    rec__file(&r, 0, &f);
    walked = bpf_map_lookup_elem(&uring_files, &fptr);
    if (storage_file(&f) && (!walked || *walked != f.ino)) {
      rec__attr(&r, 0, fptr);
      rec__file_walk(&r, 0, fptr, (__u64)cur);
      described = true;
    }
  }
  if (rec__send(&r) && described) bpf_map_update_elem(&uring_files, &fptr, &f.ino, BPF_ANY);
done:
  bpf_map_delete_elem(&uring_inflight, &key);
  return 0;
}

/* Stores through shared mappings of files: a write fault on a traced task's VM_SHARED file
 * mapping dirties the page it hits. From user mode (the store itself) and kernel mode (a
 * read() into the mapping). */
#define FSRR_PF_WRITE 2 /* x86 page fault error code: a write */

static __always_inline int write_fault(unsigned long address, unsigned long error_code) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct fault_ctx c = {.addr = address};
  struct fsrr_shared_maps* t;
  struct fsrr_mmap_write* h;
  struct fsrr_file f;
  struct rec r;
  __u64* walked;
  __u32 tgid;

  if (!(error_code & FSRR_PF_WRITE) || !bpf_task_storage_get(&state, cur, 0, 0)) return 0;
  tgid = extract__host_tgid(KPTR(task_struct, cur));
  t = bpf_map_lookup_elem(&shared_maps, &tgid);
  if (!t) return 0; /* no writable shared file mapping */
  for (int i = 0; i < FSRR_SHARED_MAPS; i++) {
    struct fsrr_shared_map* m = &t->m[i];

    if (m->end && m->start <= address && address < m->end) {
      c.file = m->file;
      c.offset = ((address - m->start) & ~4095ull) + (m->pgoff << 12);
      break;
    }
  }
  if (!c.file) return 0; /* anonymous or private memory */
  extract__file(c.file, &f);
  if (!storage_file(&f) || !rec__open(&r, SLOT_FAULT, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_MMAP_WRITE;
  h->h.flags = 0;
  h->h.tid = extract__host_tid(KPTR(task_struct, cur));
  h->h.ts = bpf_ktime_get_ns();
  h->files = (__u64)KPTR(task_struct, cur)->files;
  h->offset = c.offset;
  rec__file(&r, 0, &f);
  walked = bpf_map_lookup_elem(&uring_files, &c.file);
  if (!walked || *walked != f.ino) {
    rec__attr(&r, 0, c.file);
    rec__file_walk(&r, 0, c.file, (__u64)cur);
    if (rec__send(&r)) bpf_map_update_elem(&uring_files, &c.file, &f.ino, BPF_ANY);
    return 0;
  }
  rec__send(&r);
  return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(fsrr_fault_user, unsigned long address, struct pt_regs* regs, unsigned long error_code) {
  return write_fault(address, error_code);
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(fsrr_fault_kernel, unsigned long address, struct pt_regs* regs,
             unsigned long error_code) {
  return write_fault(address, error_code);
}

/* The open files of the --pid processes, as FSRR_REC_FD records. */
SEC("iter/task_file")
int fsrr_task_files(struct bpf_iter__task_file* ctx) {
  struct seq_file* seq = ctx->meta->seq;
  struct task_struct* task = KPTR(task_struct, ctx->task);
  struct fsrr_file f;
  struct fsrr_fd* h;
  struct rec r;
  __u32 tgid;

  if (!ctx->task || !ctx->file) return 0;
  tgid = extract__host_tgid(task);
  if (!bpf_map_lookup_elem(&iter_tgids, &tgid)) return 0;
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_FD;
  h->h.flags = 0;
  h->h.ts = bpf_ktime_get_ns();
  h->files = (__u64)task->files;
  h->fd = ctx->fd;
  h->pad = 0;
  describe_task(task, &h->h.tid, &h->pid, &h->ppid, h->comm, &h->ids, &h->root);
  extract__file(extract__fd_file(task, ctx->fd), &f); /* as a plain value, not a pointer */
  rec__file(&r, 0, &f);
  if (storage_file(&f)) {
    rec__attr(&r, 0, f.file);
    rec__file_walk(&r, 0, f.file, (__u64)task);
  }
  bpf_seq_write(seq, r.buf, rec__len(&r) & (2 * FSRR_SCRATCH_HALF - 1));
  return 0;
}
