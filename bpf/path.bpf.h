/* The canonical absolute path of a (mount, dentry): a bounded walk up the dentry and mount
 * trees with bpf_loop (bpf_d_path is refused in tracing programs). Output: the components,
 * leaf first, each as a length byte and the name; the reader reverses them. */
#pragma once

#include "extract.bpf.h"

#define WALK_STEPS 128 /* components plus mount crossings */

struct walk_ctx {
  __u64 dentry; /* struct dentry * */
  __u64 mnt;    /* struct mount * */
  __u64 root;   /* struct mount *: the task's namespace root */
  __u32 slot;   /* scratch slot */
  __u32 base;   /* where the payload starts in the slot */
  __u32 len;    /* payload bytes so far */
  __u32 flags;  /* enum fsrr_walk_flags */
};

static long walk__step(__u64 i, struct walk_ctx* c) {
  struct dentry* d = KPTR(dentry, c->dentry);
  struct mount* m = KPTR(mount, c->mnt);
  struct dentry* parent;
  const unsigned char* name;
  __u32 len, pos;
  __u8* buf;

  if (c->dentry == (__u64)m->mnt.mnt_root) {
    struct mount* up = m->mnt_parent;

    if ((__u64)up == c->mnt) { /* top of a mount tree */
      if (c->mnt != c->root) c->flags |= FSRR_WALK_UNREACHABLE;
      return 1;
    }
    c->dentry = (__u64)m->mnt_mountpoint;
    c->mnt = (__u64)up;
    return 0;
  }
  parent = d->d_parent;
  if ((__u64)parent == c->dentry) { /* a root that is not a mount root */
    c->flags |= FSRR_WALK_UNREACHABLE;
    return 1;
  }
  if (i == 0 && !d->d_hash.pprev) c->flags |= FSRR_WALK_DELETED;
  len = d->d_name.len;
  name = d->d_name.name;
  if (len == 0 || len > 255 || c->len + 1 + len > FSRR_PATH_MAX) {
    c->flags |= FSRR_WALK_TRUNCATED;
    return 1;
  }
  buf = scratch_of(c->slot);
  if (!buf) return 1;
  pos = (c->base & (FSRR_SCRATCH_HALF - 1)) + (c->len & (FSRR_PATH_MAX - 1));
  buf[pos] = len;
  bpf_probe_read_kernel(buf + pos + 1, len & 0xff, name);
  c->len += 1 + len;
  c->dentry = (__u64)parent;
  return 0;
}

/* Walks `vfsmnt`/`dentry` (kernel addresses, as numbers) into the scratch slot at `base`,
 * up to the root of the current task's mount namespace. Returns the payload length, with
 * the enum fsrr_walk_flags shifted left by 16. A global function: verified once. */
__noinline int walk__path(__u64 vfsmnt, __u64 dentry, __u32 slot, __u32 base) {
  struct task_struct* task = KPTR(task_struct, bpf_get_current_task_btf());
  struct walk_ctx c = {
      .dentry = dentry,
      .mnt = vfsmnt - bpf_core_field_offset(struct mount, mnt),
      .root = (__u64)task->nsproxy->mnt_ns->root,
      .slot = slot,
      .base = base,
  };

  if (bpf_loop(WALK_STEPS, walk__step, &c, 0) == WALK_STEPS) c.flags |= FSRR_WALK_TRUNCATED;
  return c.len | c.flags << 16;
}
