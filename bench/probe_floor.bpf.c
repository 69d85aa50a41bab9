// SPDX-License-Identifier: GPL-2.0
/* What any syscall recorder built on tp_btf sys_enter/sys_exit pays on this kernel, before
 * it records anything useful: bench/record_overhead.sh runs the copy under each variant
 * next to the native copy and to fsrr record.
 *   empty:   both programs attached, each returning at once.
 *   minimal: the least a recorder can do: find the traced task's state, note the entry
 *            time, and at exit send a 32-byte record (thread, time, duration, nr, result)
 *            through a ring buffer that user space drains every 10 ms (no wakeups). */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u32 traced_tgid = 0; /* set by the loader before the workload execs */

struct task_state {
  __u64 enter_ts;
  __u64 nr;
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct task_state);
} state SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 << 20);
} events SEC(".maps");

struct record {
  __u32 tid;
  __u32 nr;
  __u64 ts;
  __u64 dur;
  __s64 ret;
};

SEC("tp_btf/sys_enter")
int BPF_PROG(empty_enter, struct pt_regs* regs, long id) {
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(empty_exit, struct pt_regs* regs, long ret) {
  return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(minimal_enter, struct pt_regs* regs, long id) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct task_state* s = bpf_task_storage_get(&state, cur, 0, 0);

  if (!s) {
    if (cur->tgid != traced_tgid) return 0;
    s = bpf_task_storage_get(&state, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!s) return 0;
  }
  s->enter_ts = bpf_ktime_get_ns();
  s->nr = id + 1;
  return 0;
}

/* The traced process's children are traced too (rsync forks two). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(minimal_fork, struct task_struct* parent, struct task_struct* child) {
  if (bpf_task_storage_get(&state, parent, 0, 0))
    bpf_task_storage_get(&state, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(minimal_exit, struct pt_regs* regs, long ret) {
  struct task_struct* cur = bpf_get_current_task_btf();
  struct task_state* s = bpf_task_storage_get(&state, cur, 0, 0);
  struct record* r;

  if (!s || !s->nr) return 0;
  r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
  if (r) {
    r->tid = cur->pid;
    r->nr = s->nr - 1;
    r->ts = s->enter_ts;
    r->dur = bpf_ktime_get_ns() - s->enter_ts;
    r->ret = ret;
    bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP); /* drained on a timer */
  }
  s->nr = 0;
  return 0;
}
