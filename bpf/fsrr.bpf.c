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
#include "mappings.bpf.h"  // shared mappings of files: their table, the page-fault programs
#include "task.bpf.h"      // who a task is, its fds, its pause
#include "uring.bpf.h"     // the io_uring programs

char LICENSE[] SEC("license") = "GPL";

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
    else if (nr == 10 || nr == 329) /* mprotect, pkey_mprotect */
      shared_maps_protect(task, args, ret);
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
