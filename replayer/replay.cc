#include "replay.h"

#include <optional>

#include <fmt/format.h>

#include "engine.h"
#include "progress_line.h"

namespace fsrr {

result<replay_outcome> run_replay(trace_reader& trace, const replay_options& options) {
  const auto mode = parse_timing(options.timing);
  if (!mode) return tl::unexpected(mode.error());
  FSRR_TRY(check(schedule_options{*mode, options.speed}));
  if (!options.source) FSRR_TRY(options.data.check());
  if (options.realtime && *mode != timing_mode::afap) FSRR_TRY(realtime_allowed());
  auto opened = target_root::open(options.target, options.maps, trace.roots().size() > 1 ? 1 : 0);
  if (!opened) return tl::unexpected(opened.error());
  const target_root& target = *opened;
  if (!options.force && !options.tree_prepared && !target.empty())
    return failure("target {} is not empty (use --force to replay into it anyway)", options.target);
  std::optional<data_source> own;
  const data_source& data = options.source ? *options.source : own.emplace(options.data);
  replay_outcome out;
  replay_report& rep = out.report;
  rep.target = options.target;
  rep.timing = options.timing;
  rep.speed = options.speed;
  rep.data = options.data.describe();
  rep.trace_complete = trace.complete();
  for (const auto& [key, n] : trace.summary().nonfile) rep.nonfile_ops += n;

  progress_line progress(options.progress);
  prepare_options popt;
  popt.privilege = options.privilege;
  popt.space_check = options.space_check;
  popt.in_place = options.in_place;
  if (options.progress)
    popt.progress = [&](uint64_t done, uint64_t total) {
      progress.update(fmt::format("prepare: {}/{} entries", done, total), done, total);
    };
  if (!options.tree_prepared) {
    auto prepared = prepare_tree(trace, target, data, popt);
    if (!prepared) return tl::unexpected(prepared.error());
    rep.prepare = *prepared;
  }
  progress.clear();
  if (options.between) options.between();
  if (options.after_prepare) FSRR_TRY(options.after_prepare());

  if (trace.summary().events > 0) {
    engine_options eo;
    eo.timing.mode = *mode;
    eo.timing.speed = options.speed;
    eo.strict = options.strict;
    eo.issue_all = options.issue_all;
    eo.same_engines = options.same_engines;
    eo.mmap_as_write = options.mmap_as_write;
    eo.privilege = options.privilege;
    eo.cancel = options.cancel;
    eo.peers = options.peers;
    eo.start_at = options.start_at;
    eo.start_spin_ns = options.start_spin_ns;
    eo.realtime = options.realtime;
    eo.spread = options.spread;
    if (options.progress)
      eo.progress = [&](const engine_progress& p) {
        progress.update(fmt::format("replay: {}/{} events", p.events_done, p.events_total),
                        p.events_done, p.events_total);
      };
    rep.replay = replay_events(trace, target, data, eo);
    progress.clear();
  } else {
    if (options.start_at) options.start_at();
    // A tree-only trace: building the tree is the whole job, and what the report measures.
    rep.replay.wall_ns = rep.prepare.wall_ns;
    rep.replay.bytes_written = rep.prepare.bytes;
    rep.replay.files = rep.prepare.files;
  }
  if (options.data.kind == data_kind::compressible) {
    const auto achieved = options.ratios ? *options.ratios : data.measure();
    rep.data_ratio_zstd = achieved.zstd;
    rep.data_ratio_lzo = achieved.lzo;
  }
  out.status = rep.prepare.errors || !rep.replay.stopped.empty() ? 1 : 0;
  return out;
}

std::string format_outcome(const replay_outcome& r) {
  const auto& p = r.report.prepare;
  std::string s = fmt::format(
      "prepare: {} files, {} dirs, {} symlinks, {} hard links, {:.1f} MiB in {:.3f} s\n", p.files,
      p.dirs, p.symlinks, p.hardlinks, p.bytes / 1048576.0, p.wall_ns / 1e9);
  if (p.skipped) s += fmt::format("prepare: {} device nodes not created\n", p.skipped);
  if (p.withheld)
    s += fmt::format(
        "prepare: {} set-id modes and security./trusted. xattrs left out (--keep-privileged)\n",
        p.withheld);
  if (p.errors) {
    s += fmt::format("prepare: {} errors, first:\n", p.errors);
    for (const auto& e : p.first_errors) s += "  " + e + "\n";
  }
  return s + "\n" + report_table(r.report);
}

}  // namespace fsrr
