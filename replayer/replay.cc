#include "replay.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "progress_line.h"
#include "trace_error.h"

namespace fsrr {

replay_outcome run_replay(trace_reader& trace, const replay_options& options) {
  const auto start = std::chrono::steady_clock::now();
  target_root target(options.target, options.maps);
  if (!options.force && !target.empty())
    throw trace_error(fmt::format("target {} is not empty (use --force to replay into it anyway)",
                                  options.target));
  data_source data(options.data);
  replay_outcome r;

  progress_line progress(options.progress);
  prepare_options popt;
  popt.owners = ::geteuid() == 0;
  if (options.progress)
    popt.progress = [&](uint64_t done, uint64_t total) {
      progress.update(fmt::format("prepare: {}/{} entries", done, total), done, total);
    };
  r.prepare = prepare_tree(trace, target, data, popt);
  progress.clear();

  if (trace.summary().events > 0)
    throw trace_error("replaying recorded events is not built yet; this trace holds only its tree"
                      " for now");

  r.wall_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count());
  if (options.data.kind == data_kind::compressible) r.achieved = data.measure();
  const double secs = r.wall_ns / 1e9;
  r.report = {
      {"wall_ns", r.wall_ns},
      {"prepare",
       {{"files", r.prepare.files},
        {"dirs", r.prepare.dirs},
        {"symlinks", r.prepare.symlinks},
        {"hardlinks", r.prepare.hardlinks},
        {"bytes", r.prepare.bytes},
        {"wall_ns", r.prepare.wall_ns},
        {"errors", r.prepare.errors}}},
      {"ops", nlohmann::json::object()},
      {"bytes_read", 0},
      {"bytes_written", r.prepare.bytes},
      {"mib_per_s", secs > 0 ? r.prepare.bytes / 1048576.0 / secs : 0.0},
      {"files_per_s", secs > 0 ? r.prepare.files / secs : 0.0},
      {"mismatches", 0},
      {"data",
       {{"spec", options.data.describe()},
        {"zstd_ratio", r.achieved.zstd},
        {"lzo_ratio", r.achieved.lzo}}},
  };
  r.status = r.prepare.errors ? 1 : 0;
  return r;
}

std::string format_outcome(const replay_outcome& r) {
  const auto& p = r.prepare;
  std::string s = fmt::format(
      "prepare: {} files, {} dirs, {} symlinks, {} hard links, {:.1f} MiB in {:.3f} s\n", p.files,
      p.dirs, p.symlinks, p.hardlinks, p.bytes / 1048576.0, p.wall_ns / 1e9);
  if (p.skipped) s += fmt::format("prepare: {} device nodes not created\n", p.skipped);
  if (p.errors) {
    s += fmt::format("prepare: {} errors, first:\n", p.errors);
    for (const auto& e : p.first_errors) s += "  " + e + "\n";
  }
  const double secs = r.wall_ns / 1e9;
  s += fmt::format("total: {:.3f} s, {:.1f} MiB/s, {:.0f} files/s\n", secs,
                   secs > 0 ? p.bytes / 1048576.0 / secs : 0.0, secs > 0 ? p.files / secs : 0.0);
  if (r.achieved.zstd != 1.0 || r.achieved.lzo != 1.0)
    s += fmt::format("data: compressibility achieved zstd {:.2f}, lzo {:.2f}\n", r.achieved.zstd,
                     r.achieved.lzo);
  return s;
}

}  // namespace fsrr
