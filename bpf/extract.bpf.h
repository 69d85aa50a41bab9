/* Reading kernel state: a task's fd -> struct file -> inode. Loads go through
 * bpf_rdonly_cast'ed pointers, which the JIT turns into fault-safe plain loads: no helper
 * call per field. */
#pragma once

#include "kernel_constants.h"
#include "maps.bpf.h"

extern void* bpf_rdonly_cast(const void* obj, __u32 btf_id) __ksym;

/* A kernel address as a `struct name *` whose fields read as plain loads. The exact build's
 * CO-RE relocations are resolved against a minimal copy of the build's BTF (type ids
 * renumbered), so the kernel's ids of the types come from the build instead. */
#ifdef FSRR_EXACT_BTF
#include "btf_exact.h"
#define KPTR(name, p) ((struct name*)bpf_rdonly_cast((void*)(p), FSRR_BTF_ID_##name))
#else
#define KPTR(name, p) \
  ((struct name*)bpf_rdonly_cast((void*)(p), bpf_core_type_id_kernel(struct name)))
#endif

#define S_IFMT 0170000
#define S_IFREG 0100000
#define S_IFDIR 0040000
#define S_IFLNK 0120000
#define S_IFSOCK 0140000
#define AF_UNIX 1
#define AT_FDCWD -100
#define EBADF 9
#define MAP_ANONYMOUS 0x20
#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030

static __always_inline bool mode_has_path(__u32 mode) {
  __u32 t = mode & S_IFMT;

  return t == S_IFREG || t == S_IFDIR || t == S_IFLNK;
}

static __always_inline bool pseudo_fs(__u32 magic) {
  __u32 i;

  for (i = 0; i < FSRR_PSEUDO_FS && targ_pseudo_fs[i]; i++)
    if (targ_pseudo_fs[i] == magic) return true;
  return false;
}

/* A file worth a path and inode state: one on storage. */
static __always_inline bool storage_file(const struct fsrr_file* f) {
  return mode_has_path(f->mode) && !pseudo_fs(f->magic);
}

/* The unsigned long at a kernel address, as a plain load (no helper call), and as a number
 * rather than a pointer: the first member of x86-64's struct pt_regs is one. */
static __always_inline __u64 load_ulong(__u64 addr) {
  return KPTR(pt_regs, addr)->r15;
}

/* The struct file * behind fd in task's table, 0 if none. */
static __always_inline __u64 extract__fd_file(struct task_struct* task, long fd) {
  struct files_struct* files;
  struct fdtable* fdt;

  if (fd < 0 || fd > 0x7fffffff) return 0;
  files = task->files;
  if (!files) return 0;
  fdt = files->fdt;
  if (!fdt || (__u32)fd >= fdt->max_fds) return 0;
  return load_ulong((__u64)fdt->fd + fd * sizeof(void*));
}

static __always_inline void extract__file(__u64 fptr, struct fsrr_file* out) {
  struct file* f = KPTR(file, fptr);
  struct inode* inode;

  __builtin_memset(out, 0, sizeof(*out));
  if (!fptr) return;
  inode = f->f_inode;
  out->file = fptr;
  out->ino = inode->i_ino;
  out->dev = inode->i_sb->s_dev;
  out->gen = inode->i_generation;
  out->mode = inode->i_mode;
  out->rdev = inode->i_rdev;
  out->f_flags = f->f_flags;
  out->f_mode = f->f_mode;
  out->pos = f->f_pos;
  out->size = inode->i_size;
  out->magic = inode->i_sb->s_magic;
  if ((out->mode & S_IFMT) == S_IFSOCK) {
    struct socket* sock = KPTR(socket, f->private_data);
    struct sock* sk = sock->sk;

    out->sk = (__u64)sk;
    if (sk && sk->__sk_common.skc_family == AF_UNIX)
      out->peer = (__u64)KPTR(unix_sock, sk)->peer;
  }
}

/* What a syscall on a known file needs: where the fd stands after the call. */
static __always_inline void extract__fdref(__u64 fptr, struct fsrr_fdref* out) {
  struct file* f = KPTR(file, fptr);

  out->file = fptr;
  out->pos = 0;
  out->size = 0;
  out->f_flags = 0;
  out->pad = 0;
  if (!fptr) return;
  out->pos = f->f_pos;
  out->size = f->f_inode->i_size;
  out->f_flags = f->f_flags;
}

static __always_inline void extract__attr(__u64 fptr, struct fsrr_attr* a) {
  struct inode* inode = KPTR(file, fptr)->f_inode;

  a->uid = inode->i_uid.val;
  a->gid = inode->i_gid.val;
  a->nlink = inode->__i_nlink;
  a->pad = 0;
  a->blocks = inode->i_blocks;
  a->atime_ns = inode->i_atime_sec * 1000000000 + inode->i_atime_nsec;
  a->mtime_ns = inode->i_mtime_sec * 1000000000 + inode->i_mtime_nsec;
  a->ctime_ns = inode->i_ctime_sec * 1000000000 + inode->i_ctime_nsec;
}

struct acl_entry {
  __u16 tag;
  __u16 perm;
  __u32 id;
};

/* The permission bits a system.posix_acl_* value carries (owner, mask or group, other), with
 * bit 31 set; 0 if it is not a well-formed ACL. Entries are sorted by tag, so those three are
 * the first and the last two. */
static __always_inline __u32 extract__acl_mode(__u64 value, __u64 size) {
  struct {
    __u32 version;
    struct acl_entry owner;
  } head;
  struct acl_entry tail[2];

  if (!value || size < 4 + 3 * sizeof(struct acl_entry) || size > 65536 ||
      (size - 4) % sizeof(struct acl_entry))
    return 0;
  if (bpf_probe_read_user(&head, sizeof(head), (void*)value) ||
      bpf_probe_read_user(tail, sizeof(tail), (void*)(value + size - sizeof(tail))))
    return 0;
  if (head.version != FSRR_ACL_VERSION || head.owner.tag != FSRR_ACL_USER_OBJ || tail[1].tag != FSRR_ACL_OTHER ||
      (tail[0].tag != FSRR_ACL_MASK && tail[0].tag != FSRR_ACL_GROUP_OBJ))
    return 0;
  return 1u << 31 | (head.owner.perm & 7) << 6 | (tail[0].perm & 7) << 3 | (tail[1].perm & 7);
}

/* The same for setxattrat, whose value and size are in a struct xattr_args. */
static __always_inline __u32 extract__acl_mode_at(__u64 uargs) {
  struct {
    __u64 value;
    __u32 size;
    __u32 flags;
  } a;

  if (!uargs || bpf_probe_read_user(&a, sizeof(a), (void*)uargs)) return 0;
  return extract__acl_mode(a.value, a.size);
}

/* The number of `pid` in the pid namespace `level` deep; 0 if it has none there, or if that
 * namespace is not `ns_ino` (when given). */
static __always_inline __u32 extract__pid_nr(struct pid* pid, __u32 level, __u32 ns_ino) {
  struct upid u;
  __u32 inum = 0;

  if (!pid || pid->level < level || level > 64) return 0;
  if (bpf_probe_read_kernel(&u, sizeof(u),
                            (void*)pid + bpf_core_field_offset(struct pid, numbers) +
                                level * bpf_core_type_size(struct upid)))
    return 0;
  if (ns_ino && (bpf_probe_read_kernel(&inum, sizeof(inum),
                                       (void*)u.ns + bpf_core_field_offset(struct pid_namespace,
                                                                           ns.inum)) ||
                 inum != ns_ino))
    return 0;
  return u.nr;
}

/* A task's tid and tgid as the recorder sees them, 0 if it lives outside the recorder's pid
 * namespace. In the initial namespace, simply its pid. */
static __always_inline __u32 extract__host_tid(struct task_struct* t) {
  return targ_pidns_level ? extract__pid_nr(t->thread_pid, targ_pidns_level, targ_pidns_ino)
                          : t->pid;
}

static __always_inline __u32 extract__host_tgid(struct task_struct* t) {
  return targ_pidns_level
             ? extract__pid_nr(t->group_leader->thread_pid, targ_pidns_level, targ_pidns_ino)
             : t->tgid;
}

/* The task as it sees itself, in its own pid namespace. */
static __always_inline void extract__ids(struct task_struct* t, struct fsrr_ids* ids) {
  struct pid* pid = t->thread_pid;
  __u32 level = pid ? pid->level : 0;
  struct upid own;

  __builtin_memset(ids, 0, sizeof(*ids));
  if (!pid ||
      bpf_probe_read_kernel(&own, sizeof(own),
                            (void*)pid + bpf_core_field_offset(struct pid, numbers) +
                                (level & 63) * bpf_core_type_size(struct upid)))
    return;
  bpf_probe_read_kernel(&ids->pidns, sizeof(ids->pidns),
                        (void*)own.ns + bpf_core_field_offset(struct pid_namespace, ns.inum));
  ids->tid = own.nr;
  ids->pid = extract__pid_nr(t->group_leader->thread_pid, level, 0);
  ids->ppid = extract__pid_nr(t->real_parent->group_leader->thread_pid, level, ids->pidns);
}

/* The root directory a task's absolute paths start from, and the mount it sees it through. */
static __always_inline void extract__root(struct task_struct* t, struct fsrr_root* r) {
  struct fs_struct* fs = t->fs;
  struct dentry* d;

  __builtin_memset(r, 0, sizeof(*r));
  if (!fs) return; /* exiting */
  d = fs->root.dentry;
  r->ino = d->d_inode->i_ino;
  r->dev = d->d_inode->i_sb->s_dev;
  r->mnt_id = KPTR(mount, (__u64)fs->root.mnt - bpf_core_field_offset(struct mount, mnt))->mnt_id;
  r->mnt_ns = t->nsproxy ? t->nsproxy->mnt_ns->ns.inum : 0;
}

/* Syscall arguments, in order, from the saved user registers. */
static __always_inline void extract__args(struct pt_regs* regs, __u64* args) {
  args[0] = regs->di;
  args[1] = regs->si;
  args[2] = regs->dx;
  args[3] = regs->r10;
  args[4] = regs->r8;
  args[5] = regs->r9;
}

/* args[i - 1] for a descriptor's 1-based argument index; 0 for none. */
static __always_inline __u64 arg_at(const __u64* args, __u32 i) {
  return i >= 1 && i <= 6 ? args[i - 1] : 0;
}

static __always_inline __u64 extract__arg(struct pt_regs* regs, __u32 i) {
  switch (i) {
    case 0:
      return regs->di;
    case 1:
      return regs->si;
    case 2:
      return regs->dx;
    case 3:
      return regs->r10;
    case 4:
      return regs->r8;
    default:
      return regs->r9;
  }
}
