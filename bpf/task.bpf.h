// SPDX-License-Identifier: GPL-2.0
/* Who a task is and what the recorder holds of it: its ids, name and root (announce), its
 * working directory (send_cwd), the fds it has described (the per-thread memo), and the
 * pause that makes it wait while the recorder catches up. Part of fsrr.bpf.c. */
#pragma once

#include "emit.bpf.h"

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
