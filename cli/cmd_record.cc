#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <string_view>

#include "commands.h"
#include "recorder.h"
#include "trace_error.h"

namespace fsrr::cli {
namespace {

// What record prints once the trace is finished (a command that outlives --duration or
// --max-size still runs then).
recorder::record_stopped print_summary(const recorder::record_options& o) {
  return [&o](const recorder::record_result& r) {
    fmt::print(stderr, "record: {} events, {} lost, {} bytes ({:.2f} bytes/event), {:.3f} s → {}\n",
               r.events, r.lost, r.trace_bytes,
               r.events ? double(r.trace_bytes) / double(r.events) : 0.0,
               double(r.duration_ns) / 1e9, o.output);
    if (r.events)
      fmt::print(stderr, "record: fsrr used {:.3f} s of CPU, {:.2f} us per event\n",
                 double(r.cpu_ns) / 1e9, double(r.cpu_ns) / 1e3 / double(r.events));
    if (r.pauses)
      fmt::print(stderr,
                 "record: the workload was stopped {} times, {:.3f} s in all, while fsrr caught "
                 "up (--lossy never stops it)\n",
                 r.pauses, double(r.paused_ns) / 1e9);
    if (r.filtered)
      fmt::print(stderr, "record: {} events outside --path counted, not stored ({} in the kernel)\n",
                 r.filtered, r.filtered_in_kernel);
    if (r.lost)
      fmt::print(stderr, "fsrr: warning: {} events were lost; the trace is incomplete{}\n", r.lost,
                 o.lossy ? " (without --lossy, fsrr stops the workload instead)" : "");
    if (r.compat)
      fmt::print(stderr,
                 "fsrr: warning: {} 32-bit syscalls were counted, not decoded; the trace is "
                 "incomplete\n",
                 r.compat);
    if (r.unresolved)
      fmt::print(stderr, "fsrr: warning: {} fds or names could not be resolved to a path\n",
                 r.unresolved);
    if (r.cut_short)
      fmt::print(stderr, "record: {} reached; the trace is complete; {} goes on, untraced\n",
                 r.cut_by_duration ? "--duration" : "--max-size",
                 o.command.empty() ? "the workload" : o.command.front());
    else if (r.size_reached)
      fmt::print(stderr, "record: --max-size reached; the trace is complete, the events after "
                 "it left out\n");
  };
}

}  // namespace

command add_record(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "record",
      "Run COMMAND and record the file-system syscalls of it and everything it starts, with "
      "eBPF (needs root and a kernel with BTF). Exits with COMMAND's status.");
  sub->footer(
      "Put the command after --:  fsrr record -o copy.trace -- cp -a /src /dst\n"
      "Without a command, --pid, --cgroup or --all record until those processes are gone or\n"
      "SIGINT/SIGTERM, --duration or --max-size. A process that outruns fsrr is stopped until\n"
      "fsrr has caught up (counted and reported), unless --lossy.\n"
      "At the end it prints events, lost events, trace bytes, bytes/event and duration.");
  auto o = std::make_shared<recorder::record_options>();
  auto ring = std::make_shared<std::string>("16M");
  auto queue = std::make_shared<std::string>("64M");
  auto max_size = std::make_shared<std::string>();
  auto duration = std::make_shared<double>(0);
  sub->add_option("-o,--output", o->output, "Trace file to write (created 0600)")
      ->capture_default_str();
  sub->add_flag("-f,--force", o->overwrite, "Overwrite the trace file if it exists");
  sub->add_option("--pid", o->pids,
                  "Follow this running process too: its threads, its future children and "
                  "the files it already has open (repeatable; without COMMAND, record until "
                  "they all exit or fsrr gets SIGINT/SIGTERM)")
      ->allow_extra_args(false);
  sub->add_flag("--all", o->all,
                "Record every process on the system (in fsrr's pid namespace) except fsrr "
                "itself (without COMMAND, until SIGINT/SIGTERM)");
  sub->add_option("--cgroup", o->cgroup,
                  "Record every process of this cgroup (v2) and its children, those there now "
                  "and those that join later: a path, or one below the cgroup2 mount "
                  "(system.slice/backup.service). Without COMMAND, until the cgroup has had "
                  "processes and has none left, or SIGINT/SIGTERM");
  sub->add_option("--path", o->paths,
                  "Keep only events on files and directories beneath this path (repeatable, "
                  "up to 8); the initial tree holds only those. Ops on other files are counted "
                  "in the kernel and not sent")
      ->check(CLI::ExistingPath)
      ->allow_extra_args(false);
  sub->add_option("--duration", *duration,
                  "End the recording after this many seconds, with a complete trace; a "
                  "COMMAND still running goes on untraced and fsrr exits with its status")
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-size", *max_size,
                  "End the recording once the trace has about this size (K/M/G suffix), as "
                  "--duration does");
  sub->add_option("--snapshot", o->snapshot_dirs,
                  "Store this directory's whole tree in the trace before the workload starts, "
                  "so that even files the workload truncates or removes first keep their "
                  "original state (repeatable)")
      ->check(CLI::ExistingDirectory)
      ->allow_extra_args(false);
  sub->add_option("--ring-buffer", *ring,
                  "Kernel ring buffer size, with K/M/G suffix (rounded up to a power of two, "
                  "at least 256K). When it fills up faster than fsrr empties it, the traced "
                  "processes are stopped until it has room again (see --lossy)")
      ->capture_default_str();
  sub->add_option("--queue", *queue,
                  "Memory for events emptied from the ring buffer and waiting for fsrr to "
                  "decode them, with K/M/G suffix (at least 128K). When it is full the ring "
                  "buffer fills and the traced processes are stopped (see --lossy)")
      ->capture_default_str();
  sub->add_flag("--lossy", o->lossy,
                "Never stop the traced processes: when the ring buffer is full, events are "
                "lost (counted, and the trace says it is incomplete) instead");
  sub->add_flag("--strict", o->strict, "Fail (exit 125) if any event was lost");
  sub->add_option("command", o->command, "The command to run, after --");

  return {sub, [o, ring, queue, max_size, duration]() -> int {
            o->ring_bytes = recorder::parse_size(*ring);
            o->queue_bytes = recorder::parse_size(*queue);
            if (o->queue_bytes < (128u << 10))
              throw status_error(
                  2, fmt::format("--queue {}: not a size of at least 128K (try 64M)", *queue));
            o->leave_for_exit = true;  // fsrr exits once it has printed the summary
            if (o->ring_bytes == 0)
              throw status_error(2, fmt::format("--ring-buffer {}: not a size (try 64M)", *ring));
            if (!max_size->empty() && !(o->max_bytes = recorder::parse_size(*max_size)))
              throw status_error(2, fmt::format("--max-size {}: not a size (try 1G)", *max_size));
            o->duration_ns = static_cast<uint64_t>(*duration * 1e9);
            // Attached to running processes, say when the recording has begun (scripts wait
            // for this line before they start the work to be recorded).
            if (o->command.empty())
              o->on_started = [o] {
                fmt::print(stderr, "record: recording {}; until {}\n",
                           o->all ? "every process" : !o->cgroup.empty() ? "cgroup " + o->cgroup
                                                                        : fmt::format("--pid {}", fmt::join(o->pids, ",")),
                           o->all || !o->cgroup.empty() ? "SIGINT or SIGTERM" : "they are gone, or SIGINT or SIGTERM");
              };
            // For bench/record_overhead.sh: the CO-RE build where the exact one would load.
            if (const char* v = std::getenv("FSRR_BPF_BUILD"); v && std::string_view(v) == "portable")
              o->portable_bpf = true;
            // record's own failures are 125, not 1, so that a script tells them from a
            // command that exited 1 (126 and 127: the command could not be run, or found)
            try {
              return or_throw(recorder::record(*o, print_summary(*o))).exit_status;
            } catch (const status_error&) {
              throw;
            } catch (const std::exception& e) {
              throw status_error(125, e.what());
            }
          }};
}

}  // namespace fsrr::cli
