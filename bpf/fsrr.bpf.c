// SPDX-License-Identifier: GPL-2.0
/* fsrr's kernel side: one sys_enter and one sys_exit dispatcher driven by the recorder's
 * syscall table (targ_sc), the process-tree tracepoints, and an fd iterator for --pid.
 * Each syscall becomes one record at exit; what was only knowable at entry (f_pos before a
 * read, the file a close releases) waits in task storage. */
#include "vmlinux.h"  // first: the kernel's types, which the libbpf headers use

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "emit.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Describes fd in `f`; if this thread has not described it to the recorder yet, sends an
 * FSRR_REC_FD record with its path first (fds inherited, opened before recording, or
 * opened by another thread). */
static __always_inline void describe_fd(struct task_struct* task, struct task_state* s, long fd,
                                        struct fsrr_file* f, __u32 slot, __u64 ts) {
  struct fd_memo* m;
  struct fsrr_fd* h;
  struct rec r;

  extract__file(extract__fd_file(task, fd), f);
  if (!f->file || !mode_has_path(f->mode)) return;
  m = &s->seen[fd & (FSRR_FD_CACHE - 1)];
  if (m->fd == fd && m->file == f->file) return;
  if (!rec__open(&r, slot, sizeof(*h))) return;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_FD;
  h->h.flags = 0;
  h->h.tid = task->pid;
  h->h.ts = ts;
  h->files = (__u64)task->files;
  h->pid = task->tgid;
  h->fd = fd;
  h->ppid = task->real_parent->tgid;
  h->pad = 0;
  bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), task->comm);
  rec__file(&r, 0, f);
  rec__attr(&r, 0, f->file);
  rec__file_walk(&r, 0, task, f->file);
  if (rec__send(&r)) {
    m->fd = fd;
    m->file = f->file;
  }
}

static __always_inline void note_fd(struct task_state* s, long fd, __u64 file) {
  struct fd_memo* m = &s->seen[fd & (FSRR_FD_CACHE - 1)];

  m->fd = fd;
  m->file = file;
}

static __always_inline void send_cwd(struct task_struct* task, struct task_state* s, __u64 ts) {
  struct fs_struct* fs = task->fs;
  struct fsrr_cwd* h;
  struct rec r;

  if (!rec__open(&r, SLOT_SIDE, sizeof(*h))) return;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_CWD;
  h->h.flags = 0;
  h->h.tid = task->pid;
  h->h.ts = ts;
  h->fs = (__u64)fs;
  rec__walk(&r, 0, task, (__u64)fs->pwd.mnt, (__u64)fs->pwd.dentry);
  if (rec__send(&r)) s->cwd_fs = (__u64)fs;
}

static __always_inline void announce(struct task_struct* task, struct task_state* s, __u64 ts) {
  struct fsrr_task* h;
  struct rec r;

  if (!rec__open(&r, SLOT_SIDE, sizeof(*h))) return;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_TASK;
  h->h.flags = 0;
  h->h.tid = task->pid;
  h->h.ts = ts;
  h->files = (__u64)task->files;
  h->fs = (__u64)task->fs;
  h->pid = task->tgid;
  h->ppid = task->real_parent->tgid;
  bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), task->comm);
  if (rec__send(&r)) s->flags |= TASK_ANNOUNCED;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(fsrr_sys_enter, struct pt_regs* ctx_regs, long id) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct task_struct* task = KPTR(struct task_struct, cur);
  struct pt_regs* regs = KPTR(struct pt_regs, ctx_regs);
  bool compat = (task->thread_info.status & TS_COMPAT) || (id & X32_SYSCALL_BIT);
  const volatile struct fsrr_sc* sc;
  struct task_state* s;
  __u64 ptr;
  __u32 i;

  if (!compat && ((__u64)id >= FSRR_MAX_SYSCALLS || !targ_sc[id].record)) return 0;
  s = bpf_task_storage_get(&state, cur, 0, 0);
  if (!s) {
    if (!targ_all || task->tgid == targ_self_tgid) return 0;
    s = bpf_task_storage_get(&state, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!s) {
      count(FSRR_C_NOSTATE);
      return 0;
    }
  }
  if (compat) {
    count(FSRR_C_COMPAT); /* ia32 numbers mean other calls: never decode them */
    return 0;
  }
  if ((__u64)id >= FSRR_MAX_SYSCALLS) return 0;
  sc = &targ_sc[id];
  s->enter_ts = bpf_ktime_get_ns();
  s->in_flight = id + 1;
  s->enter_set = 0;
  s->loff_set = 0;
  if (sc->flags & FSRR_SC_FD0_ENTER) {
    describe_fd(task, s, extract__arg(regs, sc->fd[0] - 1), &s->enter_file[0], SLOT_ENTER,
                s->enter_ts);
    s->enter_set |= 1;
  }
  if (sc->flags & FSRR_SC_FD1_ENTER) {
    describe_fd(task, s, extract__arg(regs, sc->fd[1] - 1), &s->enter_file[1], SLOT_ENTER,
                s->enter_ts);
    s->enter_set |= 2;
  }
  for (i = 0; i < 2; i++) {
    if (!sc->loff[i]) continue;
    ptr = extract__arg(regs, sc->loff[i] - 1);
    if (ptr && !bpf_probe_read_user(&s->loff[i], sizeof(s->loff[i]), (void*)ptr))
      s->loff_set |= 1 << i;
  }
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

/* A path argument: its string, and what the recorder needs to resolve it: the cwd for
 * names relative to AT_FDCWD, the dirfd's file otherwise, or the dirfd itself for an empty
 * name (AT_EMPTY_PATH, utimensat(fd, NULL)), described as fd slot 0. */
static __always_inline void capture_path(struct rec* r, struct task_struct* task,
                                         struct task_state* s, const volatile struct fsrr_sc* sc,
                                         __u64* args, __u32 i, __u64 ts) {
  long dirfd = sc->dirfd[i] ? (int)arg_at(args, sc->dirfd[i]) : AT_FDCWD;
  struct fsrr_file f;
  int first;

  first = rec__user_str(r, i, arg_at(args, sc->path[i]), FSRR_PATH_MAX);
  if (first == '/') return;
  if (dirfd == AT_FDCWD) {
    if (first > 0 && s->cwd_fs != (__u64)task->fs) send_cwd(task, s, ts);
    return;
  }
  describe_fd(task, s, dirfd, &f, SLOT_SIDE, ts);
  if (first <= 0) rec__file(r, 0, &f);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(fsrr_sys_exit, struct pt_regs* ctx_regs, long ret) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct task_struct* task = KPTR(struct task_struct, cur);
  struct pt_regs* regs = KPTR(struct pt_regs, ctx_regs);
  const volatile struct fsrr_sc* sc;
  struct fsrr_syscall* h;
  struct task_state* s;
  struct fsrr_file f;
  struct rec r;
  __u64 now, fd1;
  __u32 nr, i;

  nr = regs->orig_ax;
  if (nr >= FSRR_MAX_SYSCALLS || !targ_sc[nr].record)
    return 0; /* cheap for the syscalls nobody records (orig_ax is -1 for none) */
  s = bpf_task_storage_get(&state, cur, 0, 0);
  if (!s || !s->in_flight) return 0; /* untraced, or entered before tracing began */
  nr = s->in_flight - 1;
  s->in_flight = 0;
  if (nr >= FSRR_MAX_SYSCALLS) return 0;
  sc = &targ_sc[nr];
  now = bpf_ktime_get_ns();
  if (!(s->flags & TASK_ANNOUNCED)) announce(task, s, s->enter_ts);
  if (!rec__open(&r, SLOT_EXIT, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_SYSCALL;
  h->h.flags = 0;
  h->h.tid = task->pid;
  h->h.ts = s->enter_ts;
  h->dur = now - s->enter_ts;
  h->ret = ret;
  h->files = (__u64)task->files;
  h->fs = (__u64)task->fs;
  extract__args(regs, h->args);
  h->loff[0] = s->loff[0];
  h->loff[1] = s->loff[1];
  h->pid = task->tgid;
  h->nr = nr;
  h->loff_set = s->loff_set;
  h->pad = 0;

  /* fds: described at entry, or now */
  for (i = 0; i < 2; i++) {
    if (s->enter_set & (1 << i)) {
      rec__file(&r, i, &s->enter_file[i]);
      continue;
    }
    if (!sc->fd[i]) continue;
    if (sc->kind == FSRR_K_MMAP && ((h->args[3] & MAP_ANONYMOUS) || (long)h->args[4] < 0)) continue;
    describe_fd(task, s, (int)arg_at(h->args, sc->fd[i]), &f, SLOT_SIDE, s->enter_ts);
    rec__file(&r, i, &f);
  }
  if (sc->kind == FSRR_K_IOCTL && (h->args[1] == FICLONE || h->args[1] == FICLONERANGE)) {
    fd1 = h->args[2];
    if (h->args[1] == FICLONERANGE) {
      rec__user(&r, h->args[2], 32);
      fd1 = 0;
      bpf_probe_read_user(&fd1, sizeof(fd1), (void*)h->args[2]);
    }
    describe_fd(task, s, (int)fd1, &f, SLOT_SIDE, s->enter_ts);
    rec__file(&r, 1, &f);
  }

  /* paths and other strings */
  for (i = 0; i < 2; i++)
    if (sc->path[i]) capture_path(&r, task, s, sc, h->args, i, s->enter_ts);
  if (sc->str) rec__user_str(&r, 2, arg_at(h->args, sc->str), FSRR_NAME_MAX);
  if (sc->user && (!(sc->flags & FSRR_SC_USER_OK) || ret == 0))
    rec__user(&r, arg_at(h->args, sc->user), sc->user_len);

  switch (sc->kind) {
    case FSRR_K_OPEN:
    case FSRR_K_DUP:
      if (ret < 0) break;
      extract__file(extract__fd_file(task, ret), &f);
      rec__file(&r, 2, &f);
      if (sc->kind == FSRR_K_OPEN && mode_has_path(f.mode)) {
        rec__attr(&r, 2, f.file);
        rec__file_walk(&r, 2, task, f.file);
      }
      note_fd(s, ret, f.file);
      break;
    case FSRR_K_FCNTL:
      if (ret < 0 || (h->args[1] != F_DUPFD && h->args[1] != F_DUPFD_CLOEXEC)) break;
      extract__file(extract__fd_file(task, ret), &f);
      rec__file(&r, 2, &f);
      note_fd(s, ret, f.file);
      break;
    case FSRR_K_IOV: {
      struct iov_ctx c = {.iov = h->args[1]};

      bpf_loop(h->args[2] > 1024 ? 1024 : h->args[2], iov__add, &c, 0);
      rec__u64(&r, 0, c.total);
      break;
    }
    case FSRR_K_CHDIR:
      if (ret == 0) send_cwd(task, s, s->enter_ts);
      break;
  }
  rec__send(&r);
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fsrr_fork, struct task_struct* tparent, struct task_struct* tchild) {
  struct task_struct* parent = KPTR(struct task_struct, tparent);
  struct task_struct* child = KPTR(struct task_struct, tchild);
  struct task_state* cs;
  struct fsrr_fork* h;
  struct rec r;

  if (!bpf_task_storage_get(&state, tparent, 0, 0) && (!targ_all || parent->tgid == targ_self_tgid))
    return 0;
  cs = bpf_task_storage_get(&state, tchild, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!cs) {
    count(FSRR_C_NOSTATE);
    return 0;
  }
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_FORK;
  h->h.flags = 0;
  h->h.tid = child->pid;
  h->h.ts = bpf_ktime_get_ns();
  h->parent_files = (__u64)parent->files;
  h->parent_fs = (__u64)parent->fs;
  h->files = (__u64)child->files;
  h->fs = (__u64)child->fs;
  h->pid = child->tgid;
  h->parent_tid = parent->pid;
  h->parent_pid = parent->tgid;
  h->pad = 0;
  bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), child->comm);
  if (rec__send(&r)) cs->flags |= TASK_ANNOUNCED;
  return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(fsrr_exec, struct task_struct* tp, pid_t old_pid, struct linux_binprm* tbprm) {
  struct task_state* s = bpf_task_storage_get(&state, tp, 0, 0);
  struct task_struct* p = KPTR(struct task_struct, tp);
  struct linux_binprm* bprm = KPTR(struct linux_binprm, tbprm);
  struct fsrr_exec* h;
  struct rec r;
  __u32 i;

  if (!s) return 0;
  for (i = 0; i < FSRR_FD_CACHE; i++) { /* close-on-exec and unshared tables */
    s->seen[i].fd = 0;
    s->seen[i].file = 0;
  }
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_EXEC;
  h->h.flags = 0;
  h->h.tid = p->pid;
  h->h.ts = bpf_ktime_get_ns();
  h->files = (__u64)p->files;
  h->pid = p->tgid;
  h->old_tid = old_pid;
  bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), p->comm);
  rec__file_walk(&r, 0, p, (__u64)bprm->file);
  if (rec__send(&r)) s->flags |= TASK_ANNOUNCED;
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fsrr_exit, struct task_struct* tp) {
  struct task_struct* p = KPTR(struct task_struct, tp);
  struct files_struct* files;
  struct fs_struct* fs;
  struct fsrr_exit* h;
  struct rec r;

  if (!bpf_task_storage_get(&state, tp, 0, 0)) return 0;
  files = p->files;
  fs = p->fs;
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_EXIT;
  h->h.flags = 0;
  if (files && files->count.counter == 1) h->h.flags |= FSRR_EXIT_LAST_FILES;
  if (fs && fs->users == 1) h->h.flags |= FSRR_EXIT_LAST_FS;
  h->h.tid = p->pid;
  h->h.ts = bpf_ktime_get_ns();
  h->files = (__u64)files;
  h->fs = (__u64)fs;
  h->pid = p->tgid;
  h->code = p->exit_code;
  rec__send(&r);
  return 0;
}

/* The open files of the --pid processes, as FSRR_REC_FD records. */
SEC("iter/task_file")
int fsrr_task_files(struct bpf_iter__task_file* ctx) {
  struct seq_file* seq = ctx->meta->seq;
  struct task_struct* task = KPTR(struct task_struct, ctx->task);
  struct fsrr_file f;
  struct fsrr_fd* h;
  struct rec r;
  __u32 tgid;

  if (!ctx->task || !ctx->file) return 0;
  tgid = task->tgid;
  if (!bpf_map_lookup_elem(&iter_tgids, &tgid)) return 0;
  if (!rec__open(&r, SLOT_TASK, sizeof(*h))) return 0;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_FD;
  h->h.flags = 0;
  h->h.tid = task->pid;
  h->h.ts = bpf_ktime_get_ns();
  h->files = (__u64)task->files;
  h->pid = tgid;
  h->fd = ctx->fd;
  h->ppid = task->real_parent->tgid;
  h->pad = 0;
  bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), task->comm);
  extract__file(extract__fd_file(task, ctx->fd), &f); /* as a plain value, not a pointer */
  rec__file(&r, 0, &f);
  if (mode_has_path(f.mode)) {
    rec__attr(&r, 0, f.file);
    rec__file_walk(&r, 0, task, f.file);
  }
  bpf_seq_write(seq, r.buf, rec__len(&r) & (2 * FSRR_SCRATCH_HALF - 1));
  return 0;
}
