/* The canonical absolute path of a (mount, dentry) as a task sees it: a bounded walk up the
 * dentry and mount trees with bpf_loop (bpf_d_path is refused in tracing programs) that ends
 * at the task's root, as d_path does: never past a chroot, never through a bind mount into
 * another layout. Output: the components, leaf first, each as a length byte and the name; the
 * reader reverses them. */
#pragma once

#include "extract.bpf.h"

#define WALK_STEPS 128 /* components plus mount crossings */

struct walk_ctx {
  __u64 dentry; /* struct dentry * */
  __u64 mnt;    /* struct mount * */
  __u64 root_mnt;    /* struct mount *: the task's root (fs->root) ... */
  __u64 root_dentry; /* ... */
  __u32 slot;   /* scratch slot */
  __u32 base;   /* where the payload starts in the slot */
  __u32 len;    /* payload bytes so far */
  __u32 flags;  /* enum fsrr_walk_flags */
};

/* Whether dentry `d`, seen through mount `m`, is one of the --path directories (by mount id
 * and inode number: what statx tells the recorder, s_dev not being st_dev on btrfs). */
static __always_inline bool walk__is_kept_dir(struct dentry* d, struct mount* m) {
  struct inode* inode = d->d_inode;
  __u64 ino;
  __u32 mnt, k;

  if (!inode) return false;
  ino = inode->i_ino;
  mnt = m->mnt_id;
  for (k = 0; k < FSRR_PATHS && k < targ_npaths; k++)
    if (targ_path_ino[k] == ino && targ_path_mnt[k] == mnt) return true;
  return false;
}

static long walk__step(__u64 i, struct walk_ctx* c) {
  struct dentry* d = KPTR(dentry, c->dentry);
  struct mount* m = KPTR(mount, c->mnt);
  struct dentry* parent;
  const unsigned char* name;
  __u32 len, pos;
  __u8* buf;

  if (targ_npaths && !(c->flags & FSRR_WALK_INSIDE) && walk__is_kept_dir(d, m))
    c->flags |= FSRR_WALK_INSIDE;
  if (c->dentry == c->root_dentry && c->mnt == c->root_mnt) return 1; /* the task's "/" */
  if (c->dentry == (__u64)m->mnt.mnt_root) {
    struct mount* up = m->mnt_parent;

    if (targ_self_mnt_id && m->mnt_id == targ_self_mnt_id) { /* the recorder's "/" */
      c->flags |= FSRR_WALK_UNREACHABLE | FSRR_WALK_RECORDER_ROOT;
      return 1;
    }
    if ((__u64)up == c->mnt) { /* top of the mount tree, and the root was not on the way */
      c->flags |= FSRR_WALK_UNREACHABLE;
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

/* Walks `vfsmnt`/`dentry` into scratch slot `at >> 16` from offset `at & 0xffff`, up to the
 * root `root_vfsmnt`/`root_dentry` (kernel addresses, as numbers: what a global function
 * takes). Returns the payload length, with the enum fsrr_walk_flags shifted left by 16.
 * A global function: verified once. */
__noinline int walk__path(__u64 vfsmnt, __u64 dentry, __u64 root_vfsmnt, __u64 root_dentry,
                          __u32 at) {
  const __u64 mnt_offset = bpf_core_field_offset(struct mount, mnt);
  struct walk_ctx c = {
      .dentry = dentry,
      .mnt = vfsmnt - mnt_offset,
      .root_mnt = root_vfsmnt - mnt_offset,
      .root_dentry = root_dentry,
      .slot = at >> 16,
      .base = at & 0xffff,
  };

  if (bpf_loop(WALK_STEPS, walk__step, &c, 0) == WALK_STEPS) c.flags |= FSRR_WALK_TRUNCATED;
  return c.len | c.flags << 16;
}
