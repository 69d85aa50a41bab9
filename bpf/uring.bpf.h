// SPDX-License-Identifier: GPL-2.0
/* The io_uring programs. Part of fsrr.bpf.c. */
#pragma once

#include "emit.bpf.h"

/* io_uring: each request of a traced task is noted as it is submitted (by the task, or by
 * its SQPOLL thread) and sent as one record when it completes, wherever that happens (inline,
 * an io-wq worker, task work). The opcodes are the UAPI's; only their arguments are read from
 * the kernel's per-opcode command data, whose layouts CO-RE relocates. */
#define PF_IO_WORKER 0x00000010
#define FSRR_IORING_OP_READV 1
#define FSRR_IORING_OP_WRITEV 2
#define FSRR_IORING_OP_FSYNC 3
#define FSRR_IORING_OP_READ_FIXED 4
#define FSRR_IORING_OP_WRITE_FIXED 5
#define FSRR_IORING_OP_SYNC_FILE_RANGE 8
#define FSRR_IORING_OP_FALLOCATE 17
#define FSRR_IORING_OP_READ 22
#define FSRR_IORING_OP_WRITE 23
#define FSRR_IORING_OP_OPENAT 18
#define FSRR_IORING_OP_CLOSE 19
#define FSRR_IORING_OP_STATX 21
#define FSRR_IORING_OP_FADVISE 24
#define FSRR_IORING_OP_OPENAT2 28
#define FSRR_SPLICE_F_FD_IN_FIXED (1u << 31)
#define FSRR_IORING_OP_SPLICE 30
#define FSRR_IORING_OP_TEE 33
#define FSRR_IORING_OP_RENAMEAT 35
#define FSRR_IORING_OP_UNLINKAT 36
#define FSRR_IORING_OP_MKDIRAT 37
#define FSRR_IORING_OP_SYMLINKAT 38
#define FSRR_IORING_OP_LINKAT 39
#define FSRR_IORING_OP_FSETXATTR 41
#define FSRR_IORING_OP_SETXATTR 42
#define FSRR_IORING_OP_FGETXATTR 43
#define FSRR_IORING_OP_GETXATTR 44
#define FSRR_IORING_OP_FIXED_FD_INSTALL 54
#define FSRR_IORING_OP_FTRUNCATE 55
#define FSRR_IORING_OP_READV_FIXED 60
#define FSRR_IORING_OP_WRITEV_FIXED 61

static __always_inline __u64 filename_of(struct filename* f) {
  return f ? (__u64)BPF_CORE_READ(f, name) : 0;
}

/* The names a request on names was submitted with, read from the kernel's copies. */
static __always_inline void uring_names(const struct fsrr_uring_sub* sub, __u64 name0, __u64 name1) {
  struct fsrr_uring_names* h;
  struct rec r;

  if (!rec__open(&r, SLOT_URING_SUB, sizeof(*h))) return;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_URING_NAMES;
  h->h.flags = 0;
  h->h.tid = sub->tid;
  h->h.ts = sub->ts;
  h->ring = sub->ring;
  rec__kernel_str(&r, 0, name0);
  rec__kernel_str(&r, 1, name1);
  rec__send(&r);
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(fsrr_uring_submit, struct io_kiocb* req) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct task_struct* owner = cur;
  struct fsrr_uring_sub sub = {};
  void* cmd = (void*)req; /* the command data begins with the file, at the request's start */
  struct io_rw* rw = cmd;
  struct io_sync* sync = cmd;
  struct io_fadvise* fadv = cmd;
  struct io_ftrunc* ftrunc = cmd;
  struct io_open* open = cmd;
  struct io_statx* statx = cmd;
  struct io_rename* rename = cmd;
  struct io_unlink* unlink = cmd;
  struct io_mkdir* mkdir = cmd;
  struct io_link* link = cmd;
  struct io_close* close = cmd;
  struct io_xattr* xattr = cmd;
  struct io_splice* splice = cmd;
  struct io_fixed_install* install = cmd;
  __u64 key = (__u64)req, name0 = 0, name1 = 0;

  if (!bpf_task_storage_get(&state, cur, 0, 0)) {
    owner = cur->flags & PF_IO_WORKER ? cur->group_leader : 0; /* an SQPOLL thread's process */
    if (!owner || !bpf_task_storage_get(&state, owner, 0, 0)) {
      /* requests come from one slab: a traced one whose completion was never seen must not
       * lend its entry to this one */
      bpf_map_delete_elem(&uring_inflight, &key);
      return 0;
    }
    sub.sqpoll = 1;
  }
  if (req->flags & (1ull << 6)) { /* REQ_F_CQE_SKIP: no completion will say what it did */
    count(FSRR_C_URING_FULL);
    return 0;
  }
  sub.ts = bpf_ktime_get_ns();
  sub.tid = extract__host_tid(KPTR(task_struct, owner));
  sub.files = (__u64)KPTR(task_struct, owner)->files;
  sub.opcode = req->opcode;
  sub.ring = (__u64)req->ctx;
  sub.flags = req->flags;
  sub.user_data = req->cqe.user_data;
  sub.fd = req->cqe.fd;
  sub.off = -1;
  switch (sub.opcode) {
    case FSRR_IORING_OP_READV:
    case FSRR_IORING_OP_WRITEV:
    case FSRR_IORING_OP_READ_FIXED:
    case FSRR_IORING_OP_WRITE_FIXED:
    case FSRR_IORING_OP_READ:
    case FSRR_IORING_OP_WRITE:
    case FSRR_IORING_OP_READV_FIXED:
    case FSRR_IORING_OP_WRITEV_FIXED:
      sub.off = BPF_CORE_READ(rw, kiocb.ki_pos);
      sub.len = BPF_CORE_READ(rw, len);
      sub.op_flags = BPF_CORE_READ(rw, flags);
      break;
    case FSRR_IORING_OP_FSYNC:
    case FSRR_IORING_OP_SYNC_FILE_RANGE:
    case FSRR_IORING_OP_FALLOCATE:
      sub.off = BPF_CORE_READ(sync, off);
      sub.len = BPF_CORE_READ(sync, len);
      sub.op_flags = sub.opcode == FSRR_IORING_OP_FALLOCATE ? BPF_CORE_READ(sync, mode)
                                                            : BPF_CORE_READ(sync, flags);
      break;
    case FSRR_IORING_OP_FADVISE:
      sub.off = BPF_CORE_READ(fadv, offset);
      sub.len = BPF_CORE_READ(fadv, len);
      sub.op_flags = BPF_CORE_READ(fadv, advice);
      break;
    case FSRR_IORING_OP_FTRUNCATE:
      sub.len = BPF_CORE_READ(ftrunc, len);
      break;
    case FSRR_IORING_OP_FIXED_FD_INSTALL: /* fd: the registered file's index (Linux 6.8) */
      if (bpf_core_type_exists(struct io_fixed_install))
        sub.op_flags = BPF_CORE_READ(install, o_flags);
      break;
    case FSRR_IORING_OP_SPLICE: /* fd: the SQE's, out; aux: the offset in */
    case FSRR_IORING_OP_TEE:
      sub.off = BPF_CORE_READ(splice, off_out);
      sub.aux = BPF_CORE_READ(splice, off_in);
      sub.len = (__u32)BPF_CORE_READ(splice, len) |
                (__u64)(__u32)BPF_CORE_READ(splice, splice_fd_in) << 32;
      sub.op_flags = BPF_CORE_READ(splice, flags);
      break;
    case FSRR_IORING_OP_OPENAT:
    case FSRR_IORING_OP_OPENAT2:
      sub.fd = BPF_CORE_READ(open, dfd);
      sub.op_flags = (__u32)BPF_CORE_READ(open, how.flags);
      sub.len = BPF_CORE_READ(open, how.mode);
      sub.aux = BPF_CORE_READ(open, how.resolve) | (__u64)BPF_CORE_READ(open, file_slot) << 32;
      name0 = filename_of(BPF_CORE_READ(open, filename));
      break;
    case FSRR_IORING_OP_STATX:
      sub.fd = BPF_CORE_READ(statx, dfd);
      sub.op_flags = BPF_CORE_READ(statx, flags);
      sub.len = BPF_CORE_READ(statx, mask);
      sub.aux = (__u64)BPF_CORE_READ(statx, buffer);
      name0 = filename_of(BPF_CORE_READ(statx, filename));
      break;
    case FSRR_IORING_OP_RENAMEAT:
      sub.fd = BPF_CORE_READ(rename, old_dfd);
      sub.off = BPF_CORE_READ(rename, new_dfd);
      sub.op_flags = BPF_CORE_READ(rename, flags);
      name0 = filename_of(BPF_CORE_READ(rename, oldpath));
      name1 = filename_of(BPF_CORE_READ(rename, newpath));
      break;
    case FSRR_IORING_OP_UNLINKAT:
      sub.fd = BPF_CORE_READ(unlink, dfd);
      sub.op_flags = BPF_CORE_READ(unlink, flags);
      name0 = filename_of(BPF_CORE_READ(unlink, filename));
      break;
    case FSRR_IORING_OP_MKDIRAT:
      sub.fd = BPF_CORE_READ(mkdir, dfd);
      sub.len = BPF_CORE_READ(mkdir, mode);
      name0 = filename_of(BPF_CORE_READ(mkdir, filename));
      break;
    case FSRR_IORING_OP_SYMLINKAT: /* oldpath: the target; newpath at new_dfd: the link */
      sub.off = BPF_CORE_READ(link, new_dfd);
      name0 = filename_of(BPF_CORE_READ(link, newpath));
      name1 = filename_of(BPF_CORE_READ(link, oldpath));
      break;
    case FSRR_IORING_OP_LINKAT:
      sub.fd = BPF_CORE_READ(link, old_dfd);
      sub.off = BPF_CORE_READ(link, new_dfd);
      sub.op_flags = BPF_CORE_READ(link, flags);
      name0 = filename_of(BPF_CORE_READ(link, oldpath));
      name1 = filename_of(BPF_CORE_READ(link, newpath));
      break;
    case FSRR_IORING_OP_CLOSE:
      sub.fd = BPF_CORE_READ(close, fd);
      sub.aux = BPF_CORE_READ(close, file_slot);
      break;
    case FSRR_IORING_OP_SETXATTR: /* a path (at the cwd), then as the fd forms */
    case FSRR_IORING_OP_GETXATTR:
      sub.fd = AT_FDCWD;
      name0 = filename_of(BPF_CORE_READ(xattr, filename));
      /* fall through */
    case FSRR_IORING_OP_FSETXATTR:
    case FSRR_IORING_OP_FGETXATTR:
      /* the attribute's name (struct xattr_name begins with it) and the value's size, as
       * the kernel copied them at submission */
      sub.len = BPF_CORE_READ(xattr, ctx.size);
      sub.op_flags = BPF_CORE_READ(xattr, ctx.flags);
      name1 = (__u64)BPF_CORE_READ(xattr, ctx.kname);
      break;
  }
  if (bpf_map_update_elem(&uring_inflight, &key, &sub, BPF_ANY)) {
    count(FSRR_C_URING_FULL);
    return 0;
  }
  if (name0 || name1) {
    /* What a relative name needs to be resolved: the cwd, or its dirfd described */
    struct task_state* s = bpf_task_storage_get(&state, owner, 0, 0);
    struct task_struct* task = KPTR(task_struct, owner);
    char first[2] = {};

    for (int i = 0; i < 2; i++) {
      long dfd = i ? (int)sub.off : sub.fd;
      __u64 name = i ? name1 : name0;

      if (!name || (i && sub.opcode == FSRR_IORING_OP_SYMLINKAT)) continue; /* a target */
      if (i && sub.opcode >= FSRR_IORING_OP_FSETXATTR && sub.opcode <= FSRR_IORING_OP_GETXATTR)
        continue; /* an attribute's name */
      if (i == 0 && sub.opcode == FSRR_IORING_OP_SYMLINKAT) dfd = (int)sub.off;
      bpf_probe_read_kernel(first, 1, (void*)name);
      if (first[0] == '/' || !first[0] || !s) continue;
      if (dfd == AT_FDCWD) {
        if (s->cwd_fs != (__u64)task->fs) send_cwd(s, sub.ts);
      } else {
        describe_fd(task, s, dfd, SLOT_SIDE, sub.ts);
      }
    }
    uring_names(&sub, name0, name1);
  }
  return 0;
}

SEC("tp_btf/io_uring_complete")
int BPF_PROG(fsrr_uring_complete, struct io_ring_ctx* ring, void* req, struct io_uring_cqe* cqe) {
  struct task_struct* cur = bpf_get_current_task_btf();
  __u64 key = (__u64)req, fptr = 0, in = 0, ino = 0, now = bpf_ktime_get_ns(), *walked;
  bool described = false;
  struct fsrr_uring_sub* sub;
  struct fsrr_uring* h;
  struct fsrr_file f;
  struct rec r;

  if (!req || !cqe) return 0;
  sub = bpf_map_lookup_elem(&uring_inflight, &key);
  if (!sub) return 0;
  if (sub->ring != (__u64)ring || sub->user_data != cqe->user_data) goto done; /* not that one */
  if (!rec__open(&r, SLOT_URING, sizeof(*h))) goto done;
  h = (void*)r.buf;
  h->h.type = FSRR_REC_URING;
  h->h.flags = 0;
  h->h.tid = sub->tid;
  h->h.ts = sub->ts;
  h->sub = *sub;
  h->dur = now - sub->ts;
  h->res = cqe->res;
  h->cqe_flags = cqe->flags;
  h->done_tid = extract__host_tid(KPTR(task_struct, cur));
  bpf_probe_read_kernel(&fptr, sizeof(fptr), req); /* io_kiocb.file, first of its members */
  if ((sub->opcode == FSRR_IORING_OP_OPENAT || sub->opcode == FSRR_IORING_OP_OPENAT2) &&
      cqe->res >= 0 && !(sub->aux >> 32)) {
    /* the file it opened, in the submitter's fd table (io-wq workers and the SQ thread
     * share it) */
    fptr = extract__fd_file(cur, cqe->res);
    if (fptr) rec__new_file(&r, 2, fptr);
    fptr = 0;
  } else if ((sub->opcode == FSRR_IORING_OP_OPENAT || sub->opcode == FSRR_IORING_OP_OPENAT2) &&
             cqe->res >= 0) {
    /* into a slot of the ring's table of registered files (a direct descriptor): the file
     * the table holds there (a slot given 1-based, or allocated: the result is its index) */
    __u32 file_slot = sub->aux >> 32;
    __u32 slot = file_slot == ~0u ? (__u32)cqe->res : file_slot - 1;
    struct io_rsrc_node** nodes = 0;
    struct io_rsrc_node* node = 0;

    if (bpf_core_field_exists(ring->file_table.data)) nodes = BPF_CORE_READ(ring, file_table.data.nodes);

    fptr = 0;
    /* (the table of io_rsrc_node since Linux 6.13; before, the file stays unknown) */
    if (bpf_core_type_exists(struct io_rsrc_node) && bpf_core_field_exists(ring->file_table.data) &&
        nodes && slot < BPF_CORE_READ(ring, file_table.data.nr) &&
        !bpf_probe_read_kernel(&node, sizeof(node), nodes + slot) && node)
      fptr = BPF_CORE_READ(node, file_ptr) & ~3ull; /* FFS_NOWAIT, FFS_ISREG */
    if (fptr) rec__new_file(&r, 2, fptr);
    fptr = 0;
  } else if (sub->opcode == FSRR_IORING_OP_STATX && cqe->res == 0) {
    rec__user(&r, sub->aux, sizeof(struct statx));
  }
  if (fptr) {
    extract__file(fptr, &f);
    rec__file(&r, 0, &f);
    walked = bpf_map_lookup_elem(&uring_files, &fptr);
    if (storage_file(&f) && (!walked || *walked != f.ino)) {
      rec__attr(&r, 0, fptr);
      rec__file_walk(&r, 0, fptr, (__u64)cur);
      described = true;
      ino = f.ino;
    }
  }
  if ((sub->opcode == FSRR_IORING_OP_SPLICE || sub->opcode == FSRR_IORING_OP_TEE) &&
      !(sub->op_flags & FSRR_SPLICE_F_FD_IN_FIXED)) {
    /* the file it moved bytes from, in the submitter's fd table; described each time (a
     * splice is rare, and the walk map is keyed by the file the request ran on) */
    in = extract__fd_file(cur, (int)(sub->len >> 32));
    if (in) {
      extract__file(in, &f);
      rec__file(&r, 1, &f);
      if (storage_file(&f)) {
        rec__attr(&r, 1, in);
        rec__file_walk(&r, 1, in, (__u64)cur);
      }
    }
  }
  if (rec__send(&r) && described) bpf_map_update_elem(&uring_files, &fptr, &ino, BPF_ANY);
done:
  bpf_map_delete_elem(&uring_inflight, &key);
  return 0;
}
