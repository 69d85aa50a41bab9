// The BPF side's lifecycle: open the skeleton, hand it the syscall table and knobs, load,
// mark tasks traced, attach, drain the ring buffer, read the loss counters, detach.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

struct fsrr_bpf;
struct ring_buffer;

namespace fsrr::recorder {

struct probe_options {
  bool all = false;                   // every task but this process
  uint64_t ring_bytes = 16ull << 20;  // power of two
};

// Receives each record, in ring-buffer order. The bytes are valid during the call only.
using record_sink = std::function<void(std::span<const uint8_t>)>;

class probes {
 public:
  // Loads the programs; throws trace_error with the reason (not root, no BTF, verifier).
  probes(const probe_options& options, record_sink sink);
  ~probes();
  probes(const probes&) = delete;
  probes& operator=(const probes&) = delete;

  // Traces this thread (and, through sched_process_fork, everything it starts).
  // False if the thread is gone.
  bool trace_thread(pid_t tid);
  void attach();
  void detach();  // idempotent; in-flight programs have finished when it returns

  int epoll_fd() const;  // readable when the ring buffer wants draining
  size_t drain();        // consumes everything available; returns the records seen

  // Per-CPU totals of an fsrr_counter, indexed by CPU.
  std::vector<uint64_t> counter(uint32_t which) const;
  // Program runs the kernel skipped because one was already running on that CPU.
  uint64_t missed_runs() const;

  // Feeds `sink` an FSRR_REC_FD record for every fd the processes `tgids` hold now.
  void read_open_files(const std::vector<pid_t>& tgids);

 private:
  fsrr_bpf* skel_ = nullptr;
  ring_buffer* rb_ = nullptr;
  record_sink sink_;
  bool attached_ = false;
};

}  // namespace fsrr::recorder
