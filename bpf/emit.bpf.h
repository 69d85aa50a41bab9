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

static __always_inline void rec__attr(struct rec* r, __u8 slot, __u64 fptr) {
  __u32 p = rec__item(r, FSRR_I_ATTR, slot, sizeof(struct fsrr_attr));

  if (!p) return;
  extract__attr(fptr, (void*)(r->buf + (p & (FSRR_SCRATCH_HALF - 1))));
  rec__commit(r, p, sizeof(struct fsrr_attr), 0);
}

static __always_inline void rec__walk(struct rec* r, __u8 slot, struct task_struct* task,
                                      __u64 vfsmnt, __u64 dentry) {
  __u32 p = rec__item(r, FSRR_I_WALK, slot, FSRR_PATH_MAX);
  __u32 flags = 0, len;

  if (!p) return;
  len = walk__path(task, vfsmnt, dentry, r->slot, p, &flags);
  rec__commit(r, p, len, flags);
}

static __always_inline void rec__file_walk(struct rec* r, __u8 slot, struct task_struct* task,
                                           __u64 fptr) {
  struct file* f = KPTR(struct file, fptr);

  rec__walk(r, slot, task, (__u64)f->f_path.mnt, (__u64)f->f_path.dentry);
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

static __always_inline void rec__user(struct rec* r, __u64 uptr, __u32 len) {
  __u32 p;

  if (!uptr || !len) return;
  if (len > FSRR_USER_MAX) len = FSRR_USER_MAX;
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

/* Hands the record over. Wakes the consumer only when enough has piled up: a wakeup per
 * record costs more than the record itself. Returns false if it was lost. */
static __always_inline bool rec__send(struct rec* r) {
  __u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= targ_wakeup_bytes
                    ? BPF_RB_FORCE_WAKEUP
                    : BPF_RB_NO_WAKEUP;
  __u32 len = rec__len(r) & (2 * FSRR_SCRATCH_HALF - 1); /* records stay below 2 * HALF */

  if (bpf_ringbuf_output(&events, r->buf, len, flags)) {
    count(FSRR_C_LOST);
    return false;
  }
  return true;
}
