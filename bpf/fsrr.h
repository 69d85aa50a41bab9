/* The records the BPF programs hand to the recorder through the ring buffer, and the syscall
 * descriptors the recorder hands to the programs. Shared by fsrr.bpf.c and recorder/;
 * fixed-width types only. */
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FSRR_MAX_SYSCALLS 512 /* x86_64 numbers stay below this */
#define FSRR_PATH_MAX 4096
#define FSRR_NAME_MAX 256       /* xattr names, and one path component with its length byte */
#define FSRR_SCRATCH_HALF 16384 /* records are built below 2 * HALF; each piece is <= HALF */
#define FSRR_USER_MAX 256       /* largest user struct copied (struct statx) */
#define FSRR_FD_CACHE 16        /* per-thread memory of fds already described */
#define FSRR_PSEUDO_FS 32       /* s_magic values of file systems that are not storage */
#define FSRR_PATHS 8            /* --path directories the programs filter on */
#define FSRR_AIO_MAX 128        /* iocbs or io_events copied from one call */
#define FSRR_SHARED_MAPS 16     /* writable shared file mappings followed per process */

/* What the recorder must do specially for a syscall, beyond its descriptor fields. */
enum fsrr_kind {
  FSRR_K_PLAIN = 0,
  FSRR_K_OPEN,       /* result is a new fd: describe it and walk its path */
  FSRR_K_DUP,        /* result is a new fd for the same file */
  FSRR_K_FCNTL,      /* F_DUPFD* makes it a dup */
  FSRR_K_CHDIR,      /* success changes the cwd: walk it */
  FSRR_K_IOV,        /* sum the iovec lengths (arg 1, count arg 2) */
  FSRR_K_IOCTL,      /* FICLONE/FICLONERANGE name a source fd */
  FSRR_K_MMAP,       /* fd only when not anonymous */
  FSRR_K_EXEC,       /* path comes from the exec record */
  FSRR_K_SETXATTR,   /* value arg 2, size arg 3: a POSIX ACL's mode bits are extracted */
  FSRR_K_CLOSE,      /* close (fd0) or close_range: the fds are no longer described */
  FSRR_K_SETXATTRAT, /* as SETXATTR, value and size in the struct xattr_args at arg 4 */
  FSRR_K_AIO_SUBMIT, /* io_submit: the iocbs it took (the result's count, at most FSRR_AIO_MAX) */
  FSRR_K_AIO_EVENTS, /* io_getevents, io_pgetevents: the io_events it returned (as many) */
  FSRR_K_MSYNC,      /* the file mapped shared at arg 0, if any, as fd slot 0's file */
  FSRR_K_MUNMAP,     /* munmap, mremap, mprotect: kept in the shared_maps table, never sent */
};

/* Descriptor flags. */
enum fsrr_sc_flags {
  FSRR_SC_FD0_ENTER = 1 << 0, /* take fd0's file at entry: close releases it */
  FSRR_SC_USER_OK = 1 << 2,   /* copy the user struct only when the call returned 0 */
  FSRR_SC_USER_PATH = 1 << 3, /* ... and only when path[0] named something (not AT_EMPTY_PATH) */
  FSRR_SC_USER_RET = 1 << 4,  /* copy the result's count of bytes, at most user_len (readlink) */
};

/* How the programs capture one syscall. Argument indexes are stored +1 so that 0 means none. */
struct fsrr_sc {
  __u8 record;   /* non-zero: this syscall is recorded */
  __u8 kind;     /* enum fsrr_kind */
  __u8 fd[2];    /* fd arguments */
  __u8 path[2];  /* path string arguments */
  __u8 dirfd[2]; /* dirfd for path[i]; none = AT_FDCWD */
  __u8 str;      /* another string: xattr name, symlink target */
  __u8 user;     /* user struct copied at exit (stat buffer, times, open_how, ...) */
  __u16 user_len;
  __u8 loff[2]; /* loff_t * arguments, read at exit: offsets for fd[0] / fd[1] */
  __u16 flags;  /* enum fsrr_sc_flags */
};

/* A task as it sees itself: its ids in its own pid namespace. Record headers carry ids as the
 * recorder sees them (in its pid namespace), which stay unique across containers. */
struct fsrr_ids {
  __u32 tid;
  __u32 pid;
  __u32 ppid;  /* 0: the parent lies outside the task's pid namespace */
  __u32 pidns; /* inode of the task's pid namespace */
};

/* What a task's absolute paths start from: its root directory (chroot), seen through a mount
 * of its mount namespace. Paths in records are walked up to it, never past it. */
struct fsrr_root {
  __u64 ino;
  __u32 dev; /* s_dev, kernel encoding */
  __u32 mnt_id;
  __u32 mnt_ns; /* inode of the mount namespace */
  __u32 pad;
};

enum fsrr_rec_type {
  FSRR_REC_SYSCALL = 1,
  FSRR_REC_TASK, /* a task the recorder has not heard of, or whose fd table or cwd changed */
  FSRR_REC_FORK,
  FSRR_REC_EXEC,
  FSRR_REC_EXIT,
  FSRR_REC_CWD, /* the cwd of an fs_struct */
  FSRR_REC_FD,  /* an fd seen for the first time: what it refers to */
  FSRR_REC_URING, /* an io_uring request, sent as it completes */
  FSRR_REC_MMAP_WRITE, /* a write fault on a shared mapping of a file: a page dirtied */
  FSRR_REC_URING_NAMES, /* the names an io_uring request was submitted with */
};

struct fsrr_rec_hdr {
  __u8 type;
  __u8 flags;
  __u16 len; /* whole record, items included */
  __u32 tid;
  __u64 ts; /* CLOCK_MONOTONIC ns; entry time for syscalls */
};

/* An open file as the kernel sees it, sent when the recorder first meets it. mode == 0: the
 * fd was not open. */
struct fsrr_file {
  __u64 file; /* struct file *: the open file description */
  __u64 ino;
  __u32 dev;  /* s_dev, kernel encoding (major << 20 | minor) */
  __u32 gen;  /* i_generation */
  __u32 mode; /* i_mode */
  __u32 rdev;
  __u32 f_flags;
  __u32 f_mode;
  __s64 pos;   /* f_pos when described */
  __s64 size;  /* i_size */
  __u32 magic; /* the super block's s_magic: procfs, sysfs, ... are not storage */
  __u32 pad;
  /* A socket: its struct sock *, and for a Unix socket its peer's (0 if none). The bytes
   * written to one end are read at the end whose peer it is: the recorder pairs them. */
  __u64 sk;
  __u64 peer;
};

/* Inode state beyond identity, for the initial tree. */
struct fsrr_attr {
  __u32 uid;
  __u32 gid;
  __u32 nlink;
  __u32 pad;
  __u64 blocks;
  __s64 atime_ns;
  __s64 mtime_ns;
  __s64 ctime_ns;
};

/* An fd argument of a syscall, at exit, once the recorder knows the file (an FD record or
 * an open told it). f_pos and i_size are after the call: the recorder subtracts what the
 * call moved. */
struct fsrr_fdref {
  __u64 file; /* struct file *; 0: the fd was not open */
  __s64 pos;
  __s64 size;
  __u32 f_flags;
  __u32 pad;
};

/* A syscall, emitted at exit, followed by items. The task's pid, fd table and cwd are those
 * of its last FSRR_REC_TASK, FORK or EXEC record. */
struct fsrr_syscall {
  struct fsrr_rec_hdr h;
  __u64 dur;
  __s64 ret;
  __u64 args[6];
  __u16 nr;
  __u16 pad[3];
};

enum fsrr_item_kind {
  FSRR_I_FILE = 1, /* slot: 0 fd[0], 1 fd[1], 2 result fd; payload struct fsrr_file */
  FSRR_I_FDREF,    /* slot as FILE; payload struct fsrr_fdref */
  FSRR_I_ATTR,     /* slot as FILE; payload struct fsrr_attr */
  FSRR_I_STR,      /* slot: 0 path[0], 1 path[1], 2 str; payload the bytes, no NUL */
  FSRR_I_WALK,     /* slot as FILE; payload: components leaf first, each a length byte + name */
  FSRR_I_USER,     /* the descriptor's user struct */
  FSRR_I_U64,      /* slot 0: iovec total; 1: a POSIX ACL's mode bits (set-xattr);
                      2, 3: the value behind loff[0], loff[1] at exit */
  FSRR_I_AIO,      /* slot 0: struct fsrr_aio_iocb each; 1: the struct io_event array */
};

/* flags of a WALK item */
enum fsrr_walk_flags {
  FSRR_WALK_DELETED = 1,     /* the leaf was unlinked */
  FSRR_WALK_UNREACHABLE = 2, /* ends outside the task's root (pipes, sockets, memfd, a file
                                reached beneath a chroot) */
  FSRR_WALK_TRUNCATED = 4,   /* deeper than the walk goes */
  FSRR_WALK_RECORDER_ROOT = 8, /* with UNREACHABLE: ended at the recorder's own root instead
                                  (a file opened before a chroot or an unshare) */
  FSRR_WALK_INSIDE = 16,       /* passed one of the --path directories */
};

struct fsrr_item {
  __u8 kind;
  __u8 slot;
  __u16 len; /* payload bytes */
  __u32 flags;
};

/* Sent when a task is first seen, and again when its fd table, cwd table or root changed. */
struct fsrr_task {
  struct fsrr_rec_hdr h;
  __u64 files;
  __u64 fs;
  __u32 pid;
  __u32 ppid;
  char comm[16];
  struct fsrr_ids ids;
  struct fsrr_root root;
};

struct fsrr_fork {
  struct fsrr_rec_hdr h; /* tid: the child */
  __u64 parent_files;
  __u64 parent_fs;
  __u64 files;
  __u64 fs;
  __u32 pid;
  __u32 parent_tid;
  __u32 parent_pid;
  __u32 tid_for_parent; /* the child's tid in the parent's pid namespace: what clone returned */
  char comm[16];
  struct fsrr_ids ids; /* the child's */
  struct fsrr_root root;
};

/* followed by a WALK item for the executable */
struct fsrr_exec {
  struct fsrr_rec_hdr h;
  __u64 files;
  __u32 pid;
  __u32 old_tid;
  char comm[16];
  struct fsrr_ids ids;
};

enum fsrr_exit_flags {
  FSRR_EXIT_LAST_FILES = 1, /* the task held the last reference to its fd table */
  FSRR_EXIT_LAST_FS = 2,
};

struct fsrr_exit {
  struct fsrr_rec_hdr h; /* flags: enum fsrr_exit_flags */
  __u64 files;
  __u64 fs;
  __u32 pid;
  __s32 code;
};

/* followed by a WALK item */
struct fsrr_cwd {
  struct fsrr_rec_hdr h;
  __u64 fs;
};

/* followed by a FILE item (slot 0) and, for files that have a path, ATTR and WALK items */
struct fsrr_fd {
  struct fsrr_rec_hdr h;
  __u64 files;
  __u32 pid;
  __s32 fd;
  __u32 ppid;
  __u32 pad;
  char comm[16]; /* who holds it: the first record of a --pid task may be this one */
  struct fsrr_ids ids;
  struct fsrr_root root;
};

/* An iocb io_submit took: its address (what its io_event names as obj) and its 64 bytes
 * (struct iocb of linux/aio_abi.h). */
struct fsrr_aio_iocb {
  __u64 addr;
  __u8 iocb[64];
};

/* An io_uring request as it was submitted (kept by the programs, keyed by the request's
 * address, until it completes). */
struct fsrr_uring_sub {
  __u64 ts;    /* CLOCK_MONOTONIC ns of the submission */
  __u64 files; /* the submitter's fd table */
  __u64 ring;  /* struct io_ring_ctx *: fixed-file indexes are the ring's */
  __u64 flags; /* the request's REQ_F_* bits: the low ones are the SQE's IOSQE_* */
  __u64 user_data;
  __s64 off; /* the offset it was given: -1 for the file's position */
  __u64 len; /* bytes (iovecs for the vectored opcodes) */
  __u32 tid; /* the submitter (an SQPOLL thread's process leader) */
  __s32 fd;  /* the SQE's fd, or its fixed-file index */
  __u32 op_flags; /* RWF_* of a read or write, fsync flags, fallocate mode */
  __u8 opcode;
  __u8 sqpoll; /* submitted by the kernel's SQ thread */
  __u16 pad;
  /* Requests on names: off is the second dirfd (renameat, linkat, symlinkat), len the mode
   * (openat, mkdirat) or statx's mask, op_flags the flags; aux openat2's resolve | file slot
   * << 32, statx's buffer, close's file slot. */
  __u64 aux;
};

/* The names of an io_uring request on names (OPENAT, STATX, RENAMEAT, ...), sent as it is
 * submitted (the kernel frees them before the completion): STR items, slot 0 the first name
 * (symlinkat: the link's), 1 the second (rename's and link's new one; symlinkat's target).
 * The request's FSRR_REC_URING record follows with the same ring and submission time. */
struct fsrr_uring_names {
  struct fsrr_rec_hdr h; /* tid, ts: as the request's sub */
  __u64 ring;
};

/* An io_uring request, sent as it completes; followed by a FILE item (slot 0) for the file
 * it ran on, and, the first time the programs meet that file, its ATTR and WALK items. */
struct fsrr_uring {
  struct fsrr_rec_hdr h; /* tid, ts: the submitter, the submission */
  struct fsrr_uring_sub sub;
  __u64 dur; /* submission to completion */
  __s64 res; /* the CQE's result */
  __u32 cqe_flags;
  __u32 done_tid; /* who completed it: the submitter, an io-wq worker, the SQ thread */
};

/* A writable shared mapping of a file, as its process's table in the programs keeps it. */
struct fsrr_shared_map {
  __u64 start, end; /* addresses; end 0: a free slot */
  __u64 file;       /* struct file * */
  __u64 pgoff;      /* the file page mapped at start */
};

struct fsrr_shared_maps {
  struct fsrr_shared_map m[FSRR_SHARED_MAPS];
  /* the process mapped a file it may write shared without PROT_WRITE: an mprotect may
   * make it writable (only then is it looked at) */
  __u32 may_protect;
  __u32 pad;
};

/* A store through a shared mapping of a file faulted: the page it dirties (the kernel
 * write-protects clean shared pages, so each page faults once per writeback). Followed by a
 * FILE item (slot 0) for the mapped file and, the first time, its ATTR and WALK items. */
struct fsrr_mmap_write {
  struct fsrr_rec_hdr h; /* tid, ts: the faulting thread, the fault */
  __u64 files;
  __u64 offset; /* of the page in the file */
};

/* An fd a thread has already described to the recorder. */
struct fd_memo {
  __u64 file; /* struct file * */
  __u64 ino;  /* its inode's number: a struct file reused for another file is not this one */
  __s32 fd;
  __u32 outside; /* a file outside the --path directories: ops on it alone are not sent */
};

enum fsrr_task_flags {
  TASK_ANNOUNCED = 1, /* the recorder has this task's pid, comm and tables */
  TASK_SPAWNED = 2,   /* fsrr's command or its descendant: stopped even with a terminal */
  TASK_OWN_ROOT = 4,  /* sees the recorder's root: the in-kernel --path filter applies */
};

/* Per traced task, in task storage; a task is traced iff it has one. The recorder creates
 * the first ones (fsrr's command, --pid threads). */
struct task_state {
  __u64 enter_ts;
  __u32 in_flight; /* syscall nr + 1; 0: none */
  __u32 flags;     /* enum fsrr_task_flags */
  __u64 files;     /* the fd table and cwd the recorder has for this task */
  __u64 fs;
  __u64 cwd_fs;     /* the fs_struct whose cwd the recorder got from this task */
  __u64 enter_file; /* FSRR_SC_FD0_ENTER: fd0's file at entry */
  __u64 root_mnt;   /* the root the recorder has for this task (struct vfsmount *, dentry *) */
  __u64 root_dentry;
  __u32 exec_tid; /* the tid at execve's entry: a thread that execs takes its leader's */
  __u32 pad;
  struct fd_memo seen[FSRR_FD_CACHE];
};

/* Per-CPU counters in the `counters` map. */
enum fsrr_counter {
  FSRR_C_LOST = 0, /* records the ring buffer had no room for */
  FSRR_C_COMPAT,   /* 32-bit syscalls: counted, not decoded */
  FSRR_C_NOSTATE,  /* task storage could not be created */
  FSRR_C_UNWOKEN,  /* bytes this CPU sent since it last woke the recorder (not a count) */
  FSRR_C_PAUSES,   /* processes stopped until the recorder caught up */
  FSRR_C_PAUSED,   /* entries added to the paused map, whatever the reason */
  FSRR_C_FILTERED, /* syscalls on files outside the --path directories: counted, not sent */
  FSRR_C_URING_FULL, /* io_uring requests not followed: more in flight than the map holds, or
                        with no completion to see (IOSQE_CQE_SKIP_SUCCESS) */
  FSRR_C_FAULT_MISSED, /* writable shared file mappings not followed: more than the table holds,
                          or moved by mremap */
  FSRR_C_COUNT,
};

/* Why a process is in the `paused` map: the recorder continues it with SIGCONT once none of
 * the reasons is left. */
enum fsrr_pause_reason {
  FSRR_PAUSE_BACKLOG = 1, /* the ring buffer was filling up: continued once drained */
  FSRR_PAUSE_ROOT = 2,    /* its root is new: continued once the recorder holds it open */
};

/* A value of the `paused` map, keyed by tgid. */
struct fsrr_pause {
  __u64 reasons; /* enum fsrr_pause_reason bits */
  __u64 since;   /* CLOCK_MONOTONIC ns of the SIGSTOP */
};
