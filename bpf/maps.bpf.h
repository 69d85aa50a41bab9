/* Knobs the recorder sets before load, and the maps every program shares. */
#pragma once

#include "fsrr.h"

const volatile __u32 targ_self_tgid = 0;          /* the recorder: never traced */
const volatile bool targ_all = false;             /* trace every task but the recorder */
const volatile __u64 targ_wakeup_bytes = 1 << 20; /* per CPU */
const volatile struct fsrr_sc targ_sc[FSRR_MAX_SYSCALLS] = {};
const volatile __u32 targ_pseudo_fs[FSRR_PSEUDO_FS] = {}; /* 0-terminated */
const volatile __u64 targ_pause_bytes = 0; /* stop a process that finds the ring this full; 0: never */
const volatile __u32 targ_pidns_level = 0;  /* the recorder's pid namespace: its depth ... */
const volatile __u32 targ_pidns_ino = 0;    /* ... and inode; tasks outside it are never traced */
const volatile __u32 targ_self_mnt_id = 0;  /* the mount whose root is the recorder's "/"; 0: none */
/* the recorder's root (fsrr_root without dev): the --path filter is for tasks that share it */
const volatile __u32 targ_self_root_mnt = 0;
const volatile __u64 targ_self_root_ino = 0;
const volatile __u32 targ_self_mnt_ns = 0;
const volatile bool targ_cgroup = false;    /* trace every task in cgroup_of[0] and below */
/* --path: the directories (mnt_id, inode) that ops on files are kept beneath */
const volatile __u32 targ_npaths = 0;
const volatile __u32 targ_path_mnt[FSRR_PATHS] = {};
const volatile __u64 targ_path_ino[FSRR_PATHS] = {};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct task_state);
} state SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 << 20); /* resized by the recorder */
} events SEC(".maps");

/* Records are built here, then copied out with their real length. One slot per program
 * family, so that programs which may nest on a CPU never share one. */
enum scratch_slot {
  SLOT_EXIT = 0, /* the syscall record */
  SLOT_SIDE,     /* records sys_exit emits before it */
  SLOT_ENTER,    /* records sys_enter emits */
  SLOT_TASK,     /* sched_process_* and the fd iterator */
  SLOT_URING,    /* io_uring completions */
  SLOT_URING_SUB, /* io_uring submissions' names */
  SLOT_FAULT,    /* write faults on shared file mappings */
  SLOT_COUNT,
};

struct scratch {
  __u8 buf[2 * FSRR_SCRATCH_HALF];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, SLOT_COUNT);
  __type(key, __u32);
  __type(value, struct scratch);
} scratch SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, FSRR_C_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

/* Processes stopped with SIGSTOP, by tgid, until the recorder continues them. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct fsrr_pause);
} paused SEC(".maps");

/* Roots the recorder holds open: a task that announces another one waits for it. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct fsrr_root);
  __type(value, __u8);
} roots SEC(".maps");

/* [0]: whether the --path filter may drop calls in the kernel; the recorder clears it when a
 * kept directory is replaced (the inodes above no longer name it). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} path_filter SEC(".maps");

/* --cgroup: the cgroup whose tasks are traced. */
struct {
  __uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} cgroup_of SEC(".maps");

/* Processes whose open fds the iterator reports (--pid). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, __u8);
} iter_tgids SEC(".maps");

/* io_uring requests of traced tasks, submitted and not yet complete, by their address. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, __u64);
  __type(value, struct fsrr_uring_sub);
} uring_inflight SEC(".maps");

/* Files whose path and inode state an io_uring or mapped-write record carried (struct file *
 * -> inode number): a later record on one of them sends the file's identity alone. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, __u64);
} uring_files SEC(".maps");

/* The writable shared file mappings of each traced process (by tgid): what a write fault's
 * address hits. Kept at mmap, munmap and mremap; copied at fork, dropped at exec and exit. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct fsrr_shared_maps);
} shared_maps SEC(".maps");

static __always_inline void count(__u32 which) {
  __u64* v = bpf_map_lookup_elem(&counters, &which);

  if (v) *v += 1;
}

static __always_inline __u8* scratch_of(__u32 slot) {
  struct scratch* s = bpf_map_lookup_elem(&scratch, &slot);

  return s ? s->buf : NULL;
}
