#include "replay.h"

#include <optional>

#include <fmt/format.h>

#include "engine.h"
#include "progress_line.h"

namespace fsrr {

struct replay_job::state {
  trace_reader& trace;
  replay_options options;
  replay_setup setup;
  timing_mode mode;
  target_root target;
  std::optional<data_source> own;
  const data_source* data;
  replay_outcome out;
  progress_line progress;
};

replay_job::replay_job(std::unique_ptr<state> s) : s_(std::move(s)) {}
replay_job::replay_job(replay_job&&) noexcept = default;
replay_job::~replay_job() = default;

result<replay_job> replay_job::open(trace_reader& trace, const replay_options& options,
                                    replay_setup setup) {
  const auto mode = parse_timing(options.timing);
  if (!mode) return tl::unexpected(mode.error());
  FSRR_TRY(check(schedule_options{*mode, options.speed}));
  if (!setup.source) FSRR_TRY(options.data.check());
  if (options.realtime && *mode != timing_mode::afap) FSRR_TRY(realtime_allowed());
  auto opened = target_root::open(options.target, options.maps, root_layout_of(trace));
  if (!opened) return tl::unexpected(opened.error());
  if (!options.force && !setup.tree_elsewhere && !opened->empty())
    return failure("target {} is not empty (use --force to replay into it anyway)", options.target);
  auto s = std::unique_ptr<state>(new state{trace,
                                            options,
                                            std::move(setup),
                                            *mode,
                                            std::move(*opened),
                                            std::nullopt,
                                            nullptr,
                                            {},
                                            progress_line(options.progress)});
  s->data = s->setup.source ? s->setup.source : &s->own.emplace(options.data);
  replay_report& rep = s->out.report;
  rep.target = options.target;
  rep.timing = options.timing;
  rep.speed = options.speed;
  rep.data = options.data.describe();
  rep.trace_complete = trace.complete();
  for (const auto& [key, n] : trace.summary().nonfile) rep.nonfile_ops += n;
  return replay_job(std::move(s));
}

result<void> replay_job::prepare() {
  state& s = *s_;
  prepare_options popt;
  popt.privilege = s.options.privilege;
  popt.space_check = s.options.space_check;
  popt.in_place = s.setup.in_place;
  if (s.options.progress)
    popt.progress = [&](uint64_t done, uint64_t total) {
      s.progress.update(fmt::format("prepare: {}/{} entries", done, total), done, total);
    };
  auto prepared = prepare_tree(s.trace, s.target, *s.data, popt);
  s.progress.clear();
  if (!prepared) return tl::unexpected(prepared.error());
  s.out.report.prepare = *prepared;
  return {};
}

replay_outcome replay_job::run() {
  local_backend local;
  return run(local);
}

replay_outcome replay_job::run(replay_backend& backend) {
  state& s = *s_;
  replay_report& rep = s.out.report;
  if (s.trace.summary().events > 0) {
    engine_options eo;
    eo.timing.mode = s.mode;
    eo.timing.speed = s.options.speed;
    eo.strict = s.options.strict;
    eo.issue_all = s.options.issue_all;
    eo.same_engines = s.options.same_engines;
    eo.mmap_as_write = s.options.mmap_as_write;
    eo.privilege = s.options.privilege;
    eo.cancel = s.options.cancel;
    eo.realtime = s.options.realtime;
    if (s.options.progress)
      eo.progress = [&](const engine_progress& p) {
        s.progress.update(fmt::format("replay: {}/{} events", p.events_done, p.events_total),
                          p.events_done, p.events_total);
      };
    rep.replay = backend.run(s.trace, s.target, *s.data, std::move(eo));
    s.progress.clear();
  } else {
    backend.run_nothing();
    rep.replay.backend = "none";  // no op to issue
    // A tree-only trace: building the tree is the whole job, and what the report measures.
    rep.replay.wall_ns = rep.prepare.wall_ns;
    rep.replay.bytes_written = rep.prepare.bytes;
    rep.replay.files = rep.prepare.files;
  }
  if (s.options.data.kind == data_kind::compressible) {
    const auto achieved = s.setup.ratios ? *s.setup.ratios : s.data->measure();
    rep.data_ratio_zstd = achieved.zstd;
    rep.data_ratio_lzo = achieved.lzo;
  }
  s.out.status = rep.prepare.errors || !rep.replay.stopped.empty() ? 1 : 0;
  return std::move(s.out);
}

result<replay_outcome> run_replay(trace_reader& trace, const replay_options& options) {
  auto job = replay_job::open(trace, options);
  if (!job) return tl::unexpected(job.error());
  FSRR_TRY(job->prepare());
  return job->run();
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
