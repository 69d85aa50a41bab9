// The BPF side's lifecycle: open the skeleton, hand it the syscall table and knobs, load,
// mark tasks traced, attach, drain the ring buffer, read the loss counters, detach.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fsrr.h"
#include "result.h"

struct bpf_map;
struct bpf_object_open_opts;
struct bpf_object_skeleton;
struct bpf_program;

namespace fsrr::recorder {

struct probe_options {
  bool all = false;                   // every task but this process
  uint64_t ring_bytes = 16ull << 20;  // power of two
  bool read_open_files = false;       // read_open_files() will be called (--pid)
  bool portable = false;              // the CO-RE build even where the exact one fits (tests)
  bool pause = true;                  // stop a process rather than lose its events
  uint32_t self_mnt_id = 0;           // the mount whose root is fsrr's "/" (0: it has none)
  fsrr_root self_root{};              // fsrr's root (the `roots` key): --path filters its tasks
  int cgroup_fd = -1;                 // trace every task in this cgroup (v2) and below
  // Directories (mount id, inode) ops on files are kept beneath; at most FSRR_PATHS.
  std::vector<std::pair<uint32_t, uint64_t>> kept_dirs;
};

// Receives a record. The bytes are valid during the call only.
using record_sink = std::function<void(std::span<const uint8_t>)>;

// Where a failed load's log goes (libbpf's messages, the verifier's log: thousands of lines,
// not for the terminal): $FSRR_BPF_LOG, or a new fsrr-bpf-load.*.log in $TMPDIR (/tmp).
// Returns the file's name, or "" when the log is empty or cannot be written.
std::string save_load_log(const std::string& log);

class probes {
 public:
  // Loads the programs, or says why they cannot be (not root, no BTF, verifier).
  static result<probes> load(const probe_options& options, record_sink sink);
  ~probes();
  probes(probes&& o) noexcept;
  probes& operator=(probes&&) = delete;

  // Traces this thread (and, through sched_process_fork, everything it starts). `spawned`:
  // fsrr started it (it may be stopped although it has a terminal). False if it is gone.
  result<bool> trace_thread(pid_t tid, bool spawned);
  result<void> attach();
  void detach();  // idempotent; in-flight programs have finished when it returns

  int ring_fd() const;  // the ring buffer map (pollable; see drain.h)
  uint64_t ring_size() const { return ring_bytes_; }
  int paused_fd() const;  // the `paused` map (pause.h)
  // A root fsrr holds (roots.h): its processes no longer wait for it.
  void add_root(const fsrr_root& root);
  // From now on, --path filters only in user space (a kept directory was replaced).
  void stop_kernel_path_filter();

  // Per-CPU totals of an fsrr_counter, indexed by CPU.
  std::vector<uint64_t> counter(uint32_t which) const;
  // Program runs the kernel skipped because one was already running on that CPU.
  uint64_t missed_runs() const;

  // Feeds `sink` an FSRR_REC_FD record for every fd the processes `tgids` hold now.
  result<void> read_open_files(const std::vector<pid_t>& tgids);

  // Whether the programs were built for this very kernel (no CO-RE relocation at load).
  bool exact() const { return exact_; }
  // Whether io_uring requests are followed (the kernel has the io_uring tracepoints).
  bool uring() const { return uring_; }
  // Whether write faults on shared file mappings are followed (the page fault tracepoints).
  bool mapped_writes() const { return faults_; }

 private:
  // What is used of a skeleton, whichever of the two builds it is.
  struct handles {
    void* skeleton = nullptr;  // fsrr_bpf or fsrr_exact_bpf
    bpf_object_skeleton* object = nullptr;
    bpf_map *events = nullptr, *state = nullptr, *counters = nullptr, *iter_tgids = nullptr,
            *paused = nullptr, *roots = nullptr, *cgroup_of = nullptr, *path_filter = nullptr;
    bpf_program *sys_enter = nullptr, *sys_exit = nullptr, *fork = nullptr, *exec = nullptr,
                *exit = nullptr, *task_files = nullptr, *uring_submit = nullptr,
                *uring_complete = nullptr, *fault_user = nullptr, *fault_kernel = nullptr;
  };
  explicit probes(record_sink sink) : sink_(std::move(sink)) {}
  template <class Skel>
  result<void> open(Skel* (*open_skeleton)(const bpf_object_open_opts*),
                    const bpf_object_open_opts* how, const probe_options& options);
  result<void> load_programs(const probe_options& options);
  result<void> set_filters(const probe_options& options);
  void destroy();

  handles bpf_;
  bool exact_ = false;
  bool uring_ = false;
  bool faults_ = false;
  uint64_t ring_bytes_ = 0;
  record_sink sink_;  // what read_open_files() finds
  bool attached_ = false;
};

}  // namespace fsrr::recorder
