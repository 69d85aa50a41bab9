// SPDX-License-Identifier: GPL-2.0
/* Shared mappings of files: the table of what each process maps shared (kept by mmap,
 * munmap, mremap at sys_exit), and the page-fault programs that see stores through them.
 * Part of fsrr.bpf.c. */
#pragma once

#include "emit.bpf.h"

/* The file a task maps shared at an address, and the offset there (msync). */
#define FSRR_VM_SHARED 8
#define FSRR_FMODE_WRITE 2 /* the file was opened for writing */
#define FSRR_EBUSY 16

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

/* A file with a path, on a file system that stores it: one whose mapped stores are followed. */
static __always_inline bool shared_maps_file(__u64 fptr) {
  struct inode* inode = KPTR(file, fptr)->f_inode;

  return inode && mode_has_path(inode->i_mode) && !pseudo_fs(inode->i_sb->s_magic);
}

/* The process's table, made if it has none yet (null if it cannot be: counted). */
static __always_inline struct fsrr_shared_maps* shared_maps_table(__u32 tgid,
                                                                  struct fsrr_shared_maps* t) {
  if (t) return t;
  bpf_map_update_elem(&shared_maps, &tgid, &no_shared_maps, BPF_NOEXIST);
  t = bpf_map_lookup_elem(&shared_maps, &tgid);
  if (!t) count(FSRR_C_FAULT_MISSED);
  return t;
}

/* A writable shared mapping of file `fptr` at [start, end), page `pgoff` at start, into the
 * process's table `t` (made if null). */
static __always_inline void shared_maps_add(__u32 tgid, struct fsrr_shared_maps* t, __u64 start,
                                            __u64 end, __u64 fptr, __u64 pgoff) {
  if (!shared_maps_file(fptr)) return;
  t = shared_maps_table(tgid, t);
  if (!t) return;
  for (int i = 0; i < FSRR_SHARED_MAPS; i++) {
    struct fsrr_shared_map* m = &t->m[i];

    if (m->end) continue;
    m->start = start;
    m->end = end;
    m->file = fptr;
    m->pgoff = pgoff;
    return;
  }
  count(FSRR_C_FAULT_MISSED); /* more than the table holds */
}

/* After a successful mmap, munmap or mremap of the current process. */
static __always_inline void shared_maps_update(struct task_struct* task, __u32 kind,
                                               const __u64* args, long ret, __u64 fptr) {
  __u32 tgid = extract__host_tgid(task);
  struct fsrr_shared_maps* t = bpf_map_lookup_elem(&shared_maps, &tgid);
  __u64 len = (args[1] + 4095) & ~4095ull;

  if (kind == FSRR_K_MUNMAP) {
    if (!t) return;
    if (ret) return; /* munmap failed; mremap's ret is an address */
    shared_maps_cut(t, args[0], args[0] + len);
    return;
  }
  if ((__u64)ret >= (__u64)-4095) return; /* failed */
  if (t) shared_maps_cut(t, ret, ret + len);
  if ((args[3] & 0xf) != 1 && (args[3] & 0xf) != 3) return; /* MAP_SHARED(_VALIDATE) */
  if ((args[3] & MAP_ANONYMOUS) || !fptr) return;                 /* a file */
  if (args[2] & 2) {                                               /* PROT_WRITE */
    shared_maps_add(tgid, t, ret, ret + len, fptr, args[5] >> 12);
  } else if ((KPTR(file, fptr)->f_mode & FSRR_FMODE_WRITE) && shared_maps_file(fptr)) {
    t = shared_maps_table(tgid, t); /* read-only for now: an mprotect may change that */
    if (t) t->may_protect = 1;
  }
}

/* mprotect(addr, len, prot) (or pkey_mprotect) that made a shared mapping of a file
 * writable: followed from here on, as an mmap with PROT_WRITE would have been, for the part
 * the call covers. Looked at only in a process that mapped a file it may write shared and
 * read-only (JITs and allocators mprotect anonymous memory all the time); a call across
 * several mappings, or one that finds the process's mappings locked, is counted (the trace
 * says some stores may be missing). */
struct protect_ctx {
  __u64 file, start, end, pgoff;
};

static long protect__vma(struct task_struct* task, struct vm_area_struct* vma,
                         struct protect_ctx* c) {
  c->start = vma->vm_start;
  c->end = vma->vm_end;
  c->file = vma->vm_file && (vma->vm_flags & FSRR_VM_SHARED) ? (__u64)vma->vm_file : 0;
  c->pgoff = vma->vm_pgoff;
  return 0;
}

static __always_inline void shared_maps_protect(struct task_struct* task, const __u64* args,
                                                long ret) {
  __u32 tgid = extract__host_tgid(task);
  struct fsrr_shared_maps* t = bpf_map_lookup_elem(&shared_maps, &tgid);
  __u64 start = args[0], end = args[0] + ((args[1] + 4095) & ~4095ull);
  struct protect_ctx c = {};
  long err;

  if (ret || !(args[2] & 2) || !t || !t->may_protect) return; /* not made writable */
  err = bpf_find_vma(bpf_get_current_task_btf(), start, protect__vma, &c, 0);
  if (err) {
    if (err == -FSRR_EBUSY) count(FSRR_C_FAULT_MISSED); /* its mm was locked: not looked at */
    return;
  }
  if (end > c.end) { /* across several mappings: the first one only (said in the trace) */
    count(FSRR_C_FAULT_MISSED);
    end = c.end;
  }
  if (!c.file || start >= end) return;
  for (int i = 0; i < FSRR_SHARED_MAPS; i++) /* followed already (writable before) */
    if (t->m[i].end && t->m[i].start <= start && end <= t->m[i].end) return;
  shared_maps_cut(t, start, end);
  shared_maps_add(tgid, t, start, end, c.file, c.pgoff + ((start - c.start) >> 12));
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
