// What a replay measured and how it is shown: a table on stdout and the JSON report whose keys
// docs/design.md fixes (keys may be added, never renamed).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data_flow.h"
#include "environment.h"
#include "ops.h"
#include "prepare.h"

namespace fsrr {

// Log-linear buckets, 32 per power of two (percentiles within ~3%); exact count, max and sum.
// Memory is taken on the first record, so an unused histogram costs a few words; merging and
// reading visit only the buckets between the lowest and the highest used (a replay merges a
// dozen of these for every thread it ends, hundreds of threads for a script's processes).
class latency_histogram {
 public:
  void record(uint64_t ns) {  // twice per replayed op
    if (counts_.empty()) counts_.resize(bucket_count);
    const size_t b = bucket(ns);
    ++counts_[b];
    note_bucket(b);
    ++count_;
    sum_ += ns;
    if (ns > max_) max_ = ns;
  }
  void merge(const latency_histogram& o);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  uint64_t sum() const { return sum_; }
  // The smallest bucket edge at or above the q-quantile (0 < q <= 1), never above max().
  uint64_t percentile(double q) const;
  // As data another process can merge: [[bucket, count]...], max, sum (mpi/stats_wire.h).
  nlohmann::json to_wire() const;
  static latency_histogram from_wire(const nlohmann::json& j);

 private:
  static constexpr int sub_bits = 5;
  static constexpr size_t bucket_count = (64 - sub_bits + 1) << sub_bits;
  static size_t bucket(uint64_t v) {
    if (v < (1u << sub_bits)) return v;
    const int e = 63 - std::countl_zero(v);
    return (static_cast<size_t>(e - sub_bits) << sub_bits) + (v >> (e - sub_bits));
  }
  static uint64_t upper_edge(size_t b);
  void note_bucket(size_t b) {
    lo_ = std::min(lo_, b);
    hi_ = std::max(hi_, b);
  }
  std::vector<uint64_t> counts_;
  size_t lo_ = bucket_count, hi_ = 0;  // the used buckets lie in [lo_, hi_]; none: lo_ > hi_
  uint64_t count_ = 0, max_ = 0, sum_ = 0;
};

struct op_stats {
  uint64_t count = 0;          // replayed
  uint64_t errors = 0;         // replayed calls that failed (expected or not)
  uint64_t mismatches = 0;     // result differs from the recorded one
  uint64_t differences = 0;    // results of the recording's or the target's environment
                               // (environment.h): emulated or produced another way
  latency_histogram latency;   // replayed
  latency_histogram recorded;  // the same ops in the recording
  std::map<int, uint64_t> errnos;  // replayed failures by errno (rare: kept sparse)
  void merge(const op_stats& o);
};

struct mismatch {
  uint64_t seq = 0;  // the event's position in the trace's time order
  int32_t tid = 0;   // recorded thread
  std::string host;  // its host in a trace of several (then named HOST:TID), else ""
  op kind = op::read;
  std::string path;  // the file, or "fd N" when only an fd is known
  int64_t recorded = 0;
  int64_t replayed = 0;
};

// Ops issued and bytes moved in one slice of the replay's time (timeline_ns long), each op in
// the slice it started in, its bytes counted as replay_stats counts them.
struct timeline_slice {
  uint64_t ops = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
};
inline constexpr uint64_t timeline_ns = 100'000'000;

// Requests replayed through the engine that submitted them (event::via): io_uring, AIO, and
// stores through shared mappings (pages, each through a mapping of its own).
struct engine_stats {
  uint64_t requests = 0;   // replayed through the engine
  uint64_t submits = 0;    // io_uring_enter / io_submit calls that carried them; mappings made
  uint64_t in_flight_sum = 0;  // requests in flight as each was submitted, itself included
  uint64_t max_in_flight = 0;
  uint64_t recorded_in_flight_sum = 0;  // the same in the recording, per ring or context
  uint64_t recorded_max_in_flight = 0;
  uint64_t as_syscalls = 0;  // requests issued as the syscall doing the same
  uint64_t fixed_buffers = 0;  // io_uring: through a registered buffer, as recorded
  void merge(const engine_stats& o) {
    fixed_buffers += o.fixed_buffers;
    requests += o.requests;
    submits += o.submits;
    in_flight_sum += o.in_flight_sum;
    max_in_flight = std::max(max_in_flight, o.max_in_flight);
    recorded_in_flight_sum += o.recorded_in_flight_sum;
    recorded_max_in_flight = std::max(recorded_max_in_flight, o.recorded_max_in_flight);
    as_syscalls += o.as_syscalls;
  }
};

// What the op replay measured.
struct replay_stats {
  uint64_t wall_ns = 0;
  uint64_t events = 0;   // events taken from the trace
  uint32_t threads = 0;  // replay threads used
  // How the ops reached the kernel (backend.h): inline, settled-ahead or lanes; "mpi" for
  // the ranks' merged report, each rank's own in its row.
  std::string backend;
  // Threads that ran SCHED_FIFO (--realtime): the replay threads (one started again for a
  // thread's events after its exit counts again) and the thread that hands them their ops.
  uint32_t realtime_threads = 0;
  // Ordinary threads that ran with a short scheduler slice (timed modes without --realtime,
  // Linux 6.12 and later), counted the same way.
  uint32_t short_slice_threads = 0;
  // Ordinary threads of a timed replay that kept to CPUs of their own (cpu_spread.h), and the
  // times one moved itself off a CPU another one claimed.
  uint32_t spread_threads = 0;
  uint64_t cpu_moves = 0;
  std::array<op_stats, op_count> ops{};
  std::array<uint64_t, op_count> skipped{};       // modelled, not issued (clone, exec, chdir…)
  std::array<uint64_t, op_count> unreplayable{};  // mmap, AIO, io_uring
  uint64_t bytes_read = 0;     // successful reads, plus bytes copied in the kernel
  uint64_t bytes_written = 0;  // successful writes, plus bytes copied in the kernel
  uint64_t files = 0;          // files opened for writing (a copy's destination files)
  uint64_t mismatches = 0;
  uint64_t differences = 0;
  std::array<uint64_t, static_cast<size_t>(env_cause::count)> by_cause{};  // differences
  std::vector<mismatch> first_mismatches;  // in trace order
  bool timed = false;
  latency_histogram lateness;  // issue time minus due time, timed modes
  // The lateness the ops' own durations force, timed modes: each issued op as a replayer that
  // cost nothing would issue it, when due or when its thread's previous op returned, whichever
  // is later, with the latencies this replay measured (thread_schedule::op_bound).
  latency_histogram op_bound_lateness;
  std::vector<timeline_slice> timeline;  // by start time, from the replay's start
  std::string stopped;         // why the replay ended early; empty if it ran to the end
  // A replay shared by several processes (peers.h): ops that waited for another process's op,
  // and the CLOCK_MONOTONIC instant this process started at (0: not shared).
  uint64_t remote_waits = 0;
  uint64_t started_ns = 0;
  flow_stats flow;             // where the written bytes came from (the whole replay's)
  std::array<engine_stats, 4> engines{};  // by fsrr::engine; [0] (syscalls) unused
  void merge(const replay_stats& o, size_t max_listed);
};

// One MPI rank's part of a replay shared by several (mpi/).
struct rank_report {
  int rank = 0;
  std::string host;
  bool idle = false;  // no recorded process was its to replay
  uint64_t events = 0;
  uint32_t threads = 0;
  std::string backend;  // the loop it issued its share through
  uint64_t wall_ns = 0;
  int64_t clock_offset_ns = 0;           // its CLOCK_MONOTONIC minus rank 0's
  latency_histogram lateness;            // timed modes
  uint64_t remote_waits = 0;             // ops that waited for another rank's op
  std::vector<uint16_t> recorded_hosts;  // the trace's hosts (indices) whose processes it replays
  uint64_t open_ns = 0;         // reading the trace's header, tables and tree
  uint64_t plan_ns = 0;         // working out who replays what (rank 0), or receiving it
  uint64_t peak_rss_bytes = 0;  // peak resident memory of the rank's process
};

struct replay_report {
  std::string trace;
  std::string target;
  std::string timing;  // faithful | think | afap
  double speed = 1.0;
  std::string data;  // data_spec::describe()
  double data_ratio_zstd = 1.0, data_ratio_lzo = 1.0;
  bool trace_complete = true;
  uint64_t nonfile_ops = 0;  // ops on pipes, sockets, ttys the recorder counted
  prepare_result prepare;
  replay_stats replay;
  std::vector<rank_report> ranks;  // an MPI replay's ranks; empty otherwise
  int64_t start_skew_ns = 0;       // the spread of the ranks' start instants, on rank 0's clock
};

// Bytes by origin, and through pipes and sockets: "data_flow" in the report and in info.
nlohmann::json flow_json(const flow_stats& f);
// The same as text: "written from reads 12.0 MiB, in-kernel copies 0.0 MiB, ...", broken into
// lines of at most summary_width columns (the first starting at `column`, after a label).
std::string flow_text(const flow_stats& f, size_t column = 0);
// The width the text summaries keep to: a terminal of 100 columns shows them unbroken.
constexpr size_t summary_width = 100;

// The JSON report (pretty-printed).
std::string report_json(const replay_report& r);
// Writes report_json to `path`.
result<void> write_report_json(const replay_report& r, const std::string& path);
// The human summary: totals, one row per op, lateness, the first mismatches.
std::string report_table(const replay_report& r);

double mib_per_s(uint64_t bytes, uint64_t wall_ns);

}  // namespace fsrr
