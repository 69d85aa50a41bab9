#include <signal.h>
#include <sys/stat.h>

#include <atomic>

#include <fmt/format.h>

#include "commands.h"
#ifdef FSRR_HAVE_MPI
#include "mpi_replay.h"
#endif
#include "replay.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::cli {
command add_replay(CLI::App& app) {
  struct opts {
    std::string file, target, report, data = "zero", engines = "same";
    std::vector<std::string> maps;
    double dedupe = 0;
    uint64_t seed = 0;
    replay_options r;
    bool no_progress = false;
    bool mpi = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "replay", "Recreate the trace's initial tree beneath TARGET, then re-issue its operations");
  sub->add_option("FILE", o->file, "Trace file")->required();
  sub->add_option("TARGET", o->target, "Directory to replay into (must be empty unless --force)")
      ->required();
  sub->add_option("--map", o->maps,
                  "FROM=TO: replay recorded paths under FROM beneath directory TO instead "
                  "(repeatable; in a trace of several roots, FROM starts with /rootN, or /hosts/NAME "
                  "for a host's own paths of merge --shared)")
      ->allow_extra_args(false);
  sub->add_option("--data", o->data, "Generated file contents: zero, random or compress:RATIO")
      ->capture_default_str();
  sub->add_option("--dedupe", o->dedupe, "Percentage of 4 KiB blocks that repeat shared blocks")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--seed", o->seed, "Seed of the generated data (same seed, same bytes)");
  sub->add_option("--timing", o->r.timing,
                  "faithful: recorded start times; think: recorded gaps per thread; afap: no "
                  "waiting")
      ->check(CLI::IsMember({"faithful", "think", "afap"}))
      ->capture_default_str();
  sub->add_option("--speed", o->r.speed, "Scale recorded time: 2 replays twice as fast")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_flag("--realtime", o->r.realtime,
                "Timed modes: run the replay's threads SCHED_FIFO, so an op that is due is not "
                "held up behind other threads for a scheduler slice; the machine's other "
                "threads wait whenever they run, spinning included (needs root, CAP_SYS_NICE "
                "or an RLIMIT_RTPRIO of 2; refused otherwise). Without it, timed replays' "
                "threads ask for the shortest scheduler slice (100 us, Linux 6.12+), which "
                "needs no privilege");
  sub->add_option("--report", o->report, "Write the report as JSON to this file");
  sub->add_flag("--force", o->r.force, "Replay into a non-empty TARGET");
  sub->add_flag("--strict", o->r.strict, "Stop at the first result that differs from the trace");
  sub->add_flag("--issue-all", o->r.issue_all,
                "Issue even the calls whose recorded failure came from the recording's file "
                "systems (EXDEV between two mounts, FICLONE on a file system without reflinks, "
                "...): by default their recorded result is taken, and counted under "
                "differences, so the program's recorded path is replayed");
  sub->add_option("--engines", o->engines,
                  "How requests of io_uring and Linux AIO are replayed: 'same' through the "
                  "same engine (a ring per recorded ring with its links, fixed files and "
                  "batches; a context per AIO context), in flight as long as the recorded order "
                  "allows; 'syscalls' as the syscall doing the same, one at a time")
      ->check(CLI::IsMember({"same", "syscalls"}))
      ->default_val("same");
  sub->add_flag("--mmap-as-write", o->r.mmap_as_write,
                "Replay stores through shared mappings of files as pwrite of the same pages, "
                "not through a mapping of the file");
  sub->add_flag("--owners", o->r.privilege.owners,
                "Give files their recorded owners (needs root); otherwise they are the "
                "replaying user's and chown calls change nothing");
  sub->add_flag("--keep-privileged", o->r.privilege.keep_privileged,
                "Make set-uid/set-gid bits and security.*/trusted.* xattrs as recorded; by "
                "default they are left out (a shared trace must not hand out privileges). "
                "Device nodes are never made");
  sub->add_flag("--no-space-check", [o](int64_t) { o->r.space_check = false; },
                "Build the initial tree even where the target lacks the free space or inodes "
                "it needs (a compressing file system may fit it)");
  sub->add_flag("--no-progress", o->no_progress, "No progress line on a terminal");
  sub->add_flag("--mpi", o->mpi,
                "Run as one rank of `mpirun -n N fsrr replay --mpi ...`: the ranks share the "
                "trace's processes, over one TARGET every rank sees (a shared mount); rank 0 "
                "builds the tree, prints the summary and writes --report");
  return {sub, [o] {
            replay_options opt = o->r;
            opt.target = o->target;
            for (const auto& m : o->maps) opt.maps.push_back(or_throw(parse_map(m)));
            opt.data = or_throw(data_spec::parse(o->data, o->dedupe, o->seed));
            opt.progress = !o->no_progress;
            opt.same_engines = o->engines == "same";
            if (!o->report.empty()) {
              struct stat a, b;
              if (::stat(o->report.c_str(), &a) == 0 && ::stat(o->file.c_str(), &b) == 0 &&
                  a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                throw trace_error("--report names the trace file itself");
            }
            if (o->mpi) {
#ifdef FSRR_HAVE_MPI
              opt.cancel = &stop_on_signals();
              return or_throw(mpi::replay(o->file, opt, o->report));
#else
              throw status_error(2, "--mpi: this fsrr was built without MPI (cmake -DFSRR_MPI=ON, "
                                    "with libopenmpi-dev installed)");
#endif
            }
            opt.cancel = &stop_on_signals();
            trace_reader trace = or_throw(trace_reader::open(o->file));
            replay_outcome r = or_throw(run_replay(trace, opt));
            r.report.trace = o->file;
            fmt::print("{}", format_outcome(r));
            if (!o->report.empty()) or_throw(write_report_json(r.report, o->report));
            return r.status;
          }};
}

}  // namespace fsrr::cli
