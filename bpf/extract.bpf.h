/* Reading kernel state: a task's fd -> struct file -> inode. Loads go through
 * bpf_rdonly_cast'ed pointers, which the JIT turns into fault-safe plain loads: no helper
 * call per field. */
#pragma once

#include "maps.bpf.h"

extern void* bpf_rdonly_cast(const void* obj, __u32 btf_id) __ksym;

#define KPTR(type, p) ((type*)bpf_rdonly_cast((void*)(p), bpf_core_type_id_kernel(type)))

#define S_IFMT 0170000
#define S_IFREG 0100000
#define S_IFDIR 0040000
#define S_IFLNK 0120000
#define TS_COMPAT 0x0002
#define X32_SYSCALL_BIT 0x40000000
#define AT_FDCWD -100
#define MAP_ANONYMOUS 0x20
#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030
#define FICLONE 0x40049409
#define FICLONERANGE 0x4020940d

static __always_inline bool mode_has_path(__u32 mode) {
  __u32 t = mode & S_IFMT;

  return t == S_IFREG || t == S_IFDIR || t == S_IFLNK;
}

/* The struct file * behind fd in task's table, 0 if none. */
static __always_inline __u64 extract__fd_file(struct task_struct* task, long fd) {
  struct files_struct* files;
  struct fdtable* fdt;
  __u64 f = 0;

  if (fd < 0 || fd > 0x7fffffff) return 0;
  files = task->files;
  if (!files) return 0;
  fdt = files->fdt;
  if (!fdt || (__u32)fd >= fdt->max_fds) return 0;
  bpf_probe_read_kernel(&f, sizeof(f), (void*)fdt->fd + fd * sizeof(void*));
  return f;
}

static __always_inline void extract__file(__u64 fptr, struct fsrr_file* out) {
  struct file* f = KPTR(struct file, fptr);
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
}

static __always_inline void extract__attr(__u64 fptr, struct fsrr_attr* a) {
  struct inode* inode = KPTR(struct file, fptr)->f_inode;

  a->uid = inode->i_uid.val;
  a->gid = inode->i_gid.val;
  a->nlink = inode->__i_nlink;
  a->pad = 0;
  a->blocks = inode->i_blocks;
  a->atime_ns = inode->i_atime_sec * 1000000000 + inode->i_atime_nsec;
  a->mtime_ns = inode->i_mtime_sec * 1000000000 + inode->i_mtime_nsec;
  a->ctime_ns = inode->i_ctime_sec * 1000000000 + inode->i_ctime_nsec;
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
