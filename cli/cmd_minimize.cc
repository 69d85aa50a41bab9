#include <unistd.h>

#include <fmt/format.h>

#include "commands.h"
#include "fs_spec.h"
#include "minimize.h"
#include "trace_error.h"

namespace fsrr::cli {

command add_minimize(CLI::App& app) {
  struct opts {
    lab::minimize_options m;
    std::string fs;
    bool quiet = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "minimize",
      "Find the smallest, simplest part of FILE that still shows what PREDICATE looks for: "
      "the initial tree cut to what the events name, delta debugging over processes, threads, "
      "files and events, then runs of reads or writes coalesced, lengths and file sizes halved, "
      "threads merged. Each candidate is replayed into a fresh target, then PREDICATE runs with "
      "FSRR_TARGET (that directory), FSRR_REPORT (the replay's JSON report) and FSRR_TRACE (the "
      "candidate trace) set; exit status 0 means it still shows it");
  sub->add_option("FILE", o->m.trace, "Trace file")->required();
  sub->add_option("-o,--output", o->m.out, "Trace file to create")->required();
  sub->add_option("--fs", o->fs,
                  "Replay each candidate on a file system made for it (SPEC as for compare; "
                  "root); default a fresh directory");
  sub->add_option("--max-tries", o->m.max_tries, "Candidates to replay at most")
      ->capture_default_str();
  sub->add_option("-j,--jobs", o->m.jobs, "Candidates replayed at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_flag("--no-replay", o->m.no_replay,
                "Run PREDICATE on each candidate without replaying it first: it replays "
                "FSRR_TRACE itself (fsrr crashtest \"$FSRR_TRACE\" --fs SPEC)");
  sub->add_flag("--keep-timing", o->m.keep_timing,
                "Replay candidates with the recorded timing and keep the result's idle gaps "
                "(default: afap, gaps dropped)");
  sub->add_option("--scratch", o->m.scratch,
                  "Directory for the candidates and their targets (default a new one in /dev/shm, "
                  "removed at the end)")
      ->check(CLI::ExistingDirectory);
  sub->add_flag("--force", o->m.force, "Overwrite the output file if it exists");
  sub->add_flag("--quiet", o->quiet, "No progress line per try");
  sub->add_option("predicate", o->m.predicate, "PREDICATE [ARGS...], after --")->required();
  return {sub, [o] {
            if (!o->fs.empty()) o->m.fs = or_throw(lab::parse_fs_spec(o->fs));
            refuse_same_file(o->m.trace, o->m.out);
            o->m.cancel = &stop_on_signals();
            const bool tty = ::isatty(2);
            if (!o->quiet)
              o->m.say = [tty](const std::string& line) {
                if (tty)
                  fmt::print(stderr, "\r\033[K{}", line);
                else
                  fmt::print(stderr, "{}\n", line);
              };
            const auto r = or_throw(lab::minimize(o->m));
            if (!o->quiet && tty) fmt::print(stderr, "\n");
            fmt::print("{:<14} {:>16} {:>14} {:>22} {:>6} {:>8}\n", "pass", "events",
                       "tree entries", "bytes", "tries", "seconds");
            for (const lab::minimize_pass& p : r.passes)
              fmt::print("{:<14} {:>16} {:>14} {:>22} {:>6} {:>8.1f}\n", p.name,
                         fmt::format("{} → {}", p.events_before, p.events_after),
                         fmt::format("{} → {}", p.tree_before, p.tree_after),
                         fmt::format("{} → {}", p.bytes_before, p.bytes_after), p.tries,
                         p.wall_ns / 1e9);
            fmt::print("minimize: {} events → {} ({:.2f}%), initial tree {} → {} entries, {} tries "
                       "in {:.1f} s{} → {}\n",
                       r.events_before, r.events_after,
                       r.events_before ? 100.0 * r.events_after / r.events_before : 0.0,
                       r.tree_before, r.tree_after, r.tries, r.wall_ns / 1e9,
                       r.exhausted ? " (--max-tries reached: a smaller one may exist)" : "",
                       o->m.out);
            return 0;
          }};
}

}  // namespace fsrr::cli
