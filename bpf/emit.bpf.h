/* Building records in a scratch slot and handing them to the ring buffer. Items start below
 * FSRR_SCRATCH_HALF and are at most that long, which is what lets the verifier accept writes
 * at a variable offset. */
#pragma once

#include "path.bpf.h"

struct rec {
  __u32 slot;
  __u8* buf;
};

/* The length built so far lives in the record header, in memory: kept in a register, its
 * exact value would differ along every path and defeat the verifier's state pruning. */
static __always_inline __u32 rec__len(struct rec* r) {
  return ((struct fsrr_rec_hdr*)r->buf)->len;
}

static __always_inline void rec__set_len(struct rec* r, __u32 len) {
  ((struct fsrr_rec_hdr*)r->buf)->len = len;
}

static __always_inline bool rec__open(struct rec* r, __u32 slot, __u32 header_len) {
  r->slot = slot;
  r->buf = scratch_of(slot);
  if (!r->buf) return false;
  rec__set_len(r, header_len);
  return true;
}

/* The record a caller began in `slot`, to add items to. */
static __always_inline bool rec__resume(struct rec* r, __u32 slot) {
  r->slot = slot;
  r->buf = scratch_of(slot);
  return r->buf != NULL;
}

/* Room for an item of up to `max` payload bytes; returns the payload offset or 0. */
static __always_inline __u32 rec__item(struct rec* r, __u8 kind, __u8 slot, __u32 max) {
  __u32 at = rec__len(r);
  struct fsrr_item* it;

  if (at + sizeof(*it) >= FSRR_SCRATCH_HALF || max > FSRR_SCRATCH_HALF - sizeof(*it)) return 0;
  it = (void*)(r->buf + (at & (FSRR_SCRATCH_HALF - 1)));
  it->kind = kind;
  it->slot = slot;
  it->len = 0;
  it->flags = 0;
  return at + sizeof(*it);
}

/* Closes the item whose payload began at `payload` with `len` bytes. */
static __always_inline void rec__commit(struct rec* r, __u32 payload, __u32 len, __u32 flags) {
  struct fsrr_item* it = (void*)(r->buf + ((payload - sizeof(*it)) & (FSRR_SCRATCH_HALF - 1)));

  it->len = len;
  it->flags = flags;
  rec__set_len(r, payload + ((len + 7) & ~7u));
}

static __always_inline void rec__file(struct rec* r, __u8 slot, const struct fsrr_file* f) {
  __u32 p = rec__item(r, FSRR_I_FILE, slot, sizeof(*f));

  if (!p) return;
  *(struct fsrr_file*)(r->buf + (p & (FSRR_SCRATCH_HALF - 1))) = *f; /* 8-aligned */
  rec__commit(r, p, sizeof(*f), 0);
}

static __always_inline void rec__fdref(struct rec* r, __u8 slot, __u64 fptr) {
  __u32 p = rec__item(r, FSRR_I_FDREF, slot, sizeof(struct fsrr_fdref));

  if (!p) return;
  extract__fdref(fptr, (void*)(r->buf + (p & (FSRR_SCRATCH_HALF - 1))));
  rec__commit(r, p, sizeof(struct fsrr_fdref), 0);
}

/* An fdref with the file's address alone: a file that is closed, or that only the dup
 * family's result shares. */
static __always_inline void rec__fdptr(struct rec* r, __u8 slot, __u64 fptr) {
  __u32 p = rec__item(r, FSRR_I_FDREF, slot, sizeof(struct fsrr_fdref));
  struct fsrr_fdref* ref;

  if (!p) return;
  ref = (void*)(r->buf + (p & (FSRR_SCRATCH_HALF - 1)));
  ref->file = fptr;
  ref->pos = 0;
  ref->size = 0;
  ref->f_flags = 0;
  ref->pad = 0;
  rec__commit(r, p, sizeof(*ref), 0);
}

static __always_inline void rec__attr(struct rec* r, __u8 slot, __u64 fptr) {
  __u32 p = rec__item(r, FSRR_I_ATTR, slot, sizeof(struct fsrr_attr));

  if (!p) return;
  extract__attr(fptr, (void*)(r->buf + (p & (FSRR_SCRATCH_HALF - 1))));
  rec__commit(r, p, sizeof(struct fsrr_attr), 0);
}

/* `path` is the kernel's struct path *; the walk ends at the root of `task` (its fs->root;
 * without one, exiting, its mount namespace's top). All are read as numbers, which is what a
 * global function takes. Returns the walk's flags, -1 if there was no room for it. */
static __always_inline int rec__walk(struct rec* r, __u8 slot, const struct path* path,
                                     __u64 task) {
  struct task_struct* t = KPTR(task_struct, task);
  __u32 p = rec__item(r, FSRR_I_WALK, slot, FSRR_PATH_MAX);
  __u64 root_mnt = 0, root_dentry = 0;
  struct mount* top;
  int res;

  if (!p) return -1;
  if (t->fs) {
    root_mnt = load_ulong((__u64)&t->fs->root.mnt);
    root_dentry = load_ulong((__u64)&t->fs->root.dentry);
  } else if (t->nsproxy) {
    top = t->nsproxy->mnt_ns->root;
    root_mnt = load_ulong((__u64)&t->nsproxy->mnt_ns->root) +
               bpf_core_field_offset(struct mount, mnt);
    root_dentry = load_ulong((__u64)&top->mnt.mnt_root);
  }
  res = walk__path(load_ulong((__u64)&path->mnt), load_ulong((__u64)&path->dentry), root_mnt,
                   root_dentry, r->slot << 16 | (p & 0xffff));
  rec__commit(r, p, res & 0xffff, res >> 16);
  return res >> 16;
}

static __always_inline int rec__file_walk(struct rec* r, __u8 slot, __u64 fptr, __u64 task) {
  return rec__walk(r, slot, &KPTR(file, fptr)->f_path, task);
}

/* Whether a walk with these flags shows a file outside the --path directories for certain:
 * it was walked up to the task's root and passed none of them. */
static __always_inline bool walk__outside(int flags) {
  return targ_npaths && flags >= 0 &&
         !(flags & (FSRR_WALK_INSIDE | FSRR_WALK_UNREACHABLE | FSRR_WALK_TRUNCATED));
}

/* A file just opened by the current task: all of it, and for a file on storage its inode
 * state and path. Returns whether it lies outside the --path directories. */
static __always_inline bool rec__new_file(struct rec* r, __u8 slot, __u64 fptr) {
  struct fsrr_file f;

  extract__file(fptr, &f);
  rec__file(r, slot, &f);
  if (!storage_file(&f)) return false;
  rec__attr(r, slot, fptr);
  return walk__outside(rec__file_walk(r, slot, fptr, (__u64)bpf_get_current_task_btf()));
}

/* A NUL-terminated user string, stored without its NUL. Returns its first byte, or -1. */
static __always_inline int rec__user_str(struct rec* r, __u8 slot, __u64 uptr, __u32 max) {
  __u32 p;
  long n;
  __u8* dst;

  if (!uptr) return -1;
  p = rec__item(r, FSRR_I_STR, slot, FSRR_PATH_MAX);
  if (!p) return -1;
  dst = r->buf + (p & (FSRR_SCRATCH_HALF - 1));
  n = bpf_probe_read_user_str(dst, max & (FSRR_PATH_MAX * 2 - 1), (void*)uptr);
  if (n <= 0) {
    rec__set_len(r, p - sizeof(struct fsrr_item)); /* drop the item: unreadable */
    return -1;
  }
  rec__commit(r, p, n - 1, 0);
  return n > 1 ? dst[0] : 0;
}

/* A NUL-terminated kernel string (a struct filename's), stored without its NUL. */
static __always_inline void rec__kernel_str(struct rec* r, __u8 slot, __u64 kptr) {
  __u32 p;
  long n;

  if (!kptr) return;
  p = rec__item(r, FSRR_I_STR, slot, FSRR_PATH_MAX);
  if (!p) return;
  n = bpf_probe_read_kernel_str(r->buf + (p & (FSRR_SCRATCH_HALF - 1)), FSRR_PATH_MAX, (void*)kptr);
  if (n <= 0) {
    rec__set_len(r, p - sizeof(struct fsrr_item));
    return;
  }
  rec__commit(r, p, n - 1, 0);
}

/* Whether the STR item whose header is at `at` holds "system.posix_acl_access" or
 * "system.posix_acl_default" (payloads are 8-aligned; the copy ends with its NUL). */
static __always_inline bool rec__is_acl_name(struct rec* r, __u32 at) {
  struct fsrr_item* it = (void*)(r->buf + (at & (FSRR_SCRATCH_HALF - 1)));
  __u64* w = (void*)(r->buf + ((at + sizeof(*it)) & (FSRR_SCRATCH_HALF - 1)));

  if (at >= rec__len(r) || it->kind != FSRR_I_STR || (it->len != 23 && it->len != 24)) return false;
  if (w[0] != 0x702e6d6574737973 || w[1] != 0x6c63615f7869736f) return false; /* system.posix_acl */
  return it->len == 23 ? (w[2] & 0xffffffffffffff) == 0x7373656363615f        /* _access */
                       : w[2] == 0x746c75616665645f;                          /* _default */
}

static __always_inline void rec__user(struct rec* r, __u64 uptr, __u64 len) {
  __u32 p;

  if (!uptr || !len) return;
  if (len > FSRR_USER_MAX) len = FSRR_USER_MAX;
  barrier_var(len); /* the verifier must see the bound on the register the call takes */
  p = rec__item(r, FSRR_I_USER, 0, FSRR_USER_MAX);
  if (!p) return;
  if (bpf_probe_read_user(r->buf + (p & (FSRR_SCRATCH_HALF - 1)), len, (void*)uptr)) {
    rec__set_len(r, p - sizeof(struct fsrr_item));
    return;
  }
  rec__commit(r, p, len, 0);
}

static __always_inline void rec__u64(struct rec* r, __u8 slot, __u64 v) {
  __u32 p = rec__item(r, FSRR_I_U64, slot, sizeof(v));

  if (!p) return;
  *(__u64*)(r->buf + (p & (FSRR_SCRATCH_HALF - 1))) = v;
  rec__commit(r, p, sizeof(v), 0);
}

/* Hands the record over. Wakes the consumer only once this CPU has sent enough: a wakeup
 * per record costs more than the record itself (an IPI, a VM exit under KVM), and a
 * per-CPU count, unlike bpf_ringbuf_query, wakes it once per batch even while it lags.
 * Returns false if the record was lost. */
static __always_inline bool rec__send(struct rec* r) {
  __u32 len = rec__len(r) & (2 * FSRR_SCRATCH_HALF - 1); /* records stay below 2 * HALF */
  __u32 which = FSRR_C_UNWOKEN;
  __u64* unwoken = bpf_map_lookup_elem(&counters, &which);
  __u64 flags = BPF_RB_NO_WAKEUP;

  if (unwoken && (*unwoken += len) >= targ_wakeup_bytes) {
    *unwoken = 0;
    flags = BPF_RB_FORCE_WAKEUP;
  }
  if (bpf_ringbuf_output(&events, r->buf, len, flags)) {
    count(FSRR_C_LOST);
    return false;
  }
  return true;
}
