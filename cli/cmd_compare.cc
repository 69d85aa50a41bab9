#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "commands.h"
#include "compare.h"
#include "compare_html.h"
#include "trace_error.h"

namespace fsrr::cli {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw trace_error(fmt::format("cannot write {}", path));
}

}  // namespace

command add_compare(CLI::App& app) {
  struct opts {
    std::string file, out = ".", data = "zero", source = "tmpfs";
    std::vector<std::string> fs, ages;
    double dedupe = 0;
    bool force = false;
    uint64_t seed = 0;
    lab::compare_options c;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "compare",
      "Replay one trace on several file systems fsrr makes itself (on loop images), in rounds, "
      "and compare them side by side: DIR/compare.json, DIR/compare.html and a table");
  sub->footer(
      "SPEC: KIND[:compress=ALG][:mkfs=OPTS][:mount=OPTS][:size=SIZE] with KIND tmpfs, ext2, "
      "ext3,\n"
      "ext4, xfs, btrfs or any KIND mkfs.KIND exists for; KIND@KIND puts the first's image on the\n"
      "second; NAME=DIR uses an existing empty directory as it is. An image is a sparse file of\n"
      "twice the trace's tree and written bytes, plus 256 MiB, and at least 4 GiB (below 512 MiB\n"
      "mke2fs would pick 1 KiB blocks); SIZE sets it (e.g. size=20G).\n"
      "Example:  fsrr compare copy.trace --fs tmpfs --fs ext4 --fs xfs --fs btrfs:compress=lzo -o "
      "out\n"
      "Exit status: 0; 1 if a run failed or did not verify; 3 if a row got slower than "
      "--baseline.");
  sub->add_option("FILE", o->file, "Trace file")->required()->check(CLI::ExistingFile);
  sub->add_option("--fs", o->fs, "A file system to compare on (repeatable)")
      ->required()
      ->allow_extra_args(false);
  sub->add_option("--runs", o->c.runs, "Rounds over all the file systems (median, min, max)")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  sub->add_option("--timing", o->c.timing,
                  "afap (each file system as fast as it goes), or faithful or think (the recorded "
                  "pace), as replay")
      ->check(CLI::IsMember({"faithful", "think", "afap"}))
      ->capture_default_str();
  sub->add_flag("--realtime", o->c.realtime,
                "Timed modes: the replay's threads run SCHED_FIFO, as replay --realtime "
                "(refused before any file system is made where that is not allowed)");
  sub->add_option("--data", o->data, "Generated file contents: zero, random or compress:RATIO")
      ->capture_default_str();
  sub->add_option("--dedupe", o->dedupe, "Percentage of 4 KiB blocks that repeat shared blocks")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--seed", o->seed, "Seed of the generated data");
  sub->add_option("--repeat", o->c.repeat,
                  "Replay this many times per run into copy01..copyN on the same file system "
                  "(identical data: a deduplicating file system sees copies)")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  sub->add_flag("--drop-caches", o->c.drop_caches,
                "Drop the page cache between prepare and replay");
  sub->add_option("--images", o->c.images,
                  "Directory for the images and mount points, made if missing (default: a new "
                  "one in /var/tmp)");
  sub->add_option("--source-fs", o->source,
                  "Where the directories the workload only reads (a copy's source) are prepared")
      ->capture_default_str();
  sub->add_flag("--all-on-test", o->c.all_on_test,
                "Prepare everything on the file system under test, the sources too");
  sub->add_flag("--issue-all", o->c.issue_all, "As replay --issue-all");
  sub->add_option("--baseline", o->c.baseline,
                  "An earlier compare.json: each row's change against it; exit 3 if one got "
                  "slower beyond its earlier spread")
      ->check(CLI::ExistingFile);
  sub->add_option("--age", o->ages,
                  "Compare each file system aged by this profile, as fsrr age makes it: "
                  "fill=PCT[,churn=N][,sizes=DIST][,seed=S] or replay=TRACE[,rounds=N][,keep=K]; "
                  "none for mkfs fresh. Repeatable: "
                  "--age none --age fill=70,churn=3 puts fresh and aged side by side")
      ->allow_extra_args(false);
  sub->add_option("--age-cache", o->c.age_cache,
                  "Where aged images are kept for the next compare (default: IMAGES/aged with "
                  "--images, else /var/cache/fsrr/aged); off: age anew and keep nothing");
  sub->add_option("-o,--output", o->out, "Directory for compare.json and compare.html (made if missing)")
      ->capture_default_str();
  sub->add_flag("-f,--force", o->force, "Overwrite compare.json and compare.html in it");
  return {sub, [o] {
            lab::compare_options& c = o->c;
            c.trace = o->file;
            for (const auto& f : o->fs) c.fs.push_back(or_throw(lab::parse_fs_spec(f)));
            c.source_fs = or_throw(lab::parse_fs_spec(o->source));
            for (const auto& a : o->ages) c.ages.push_back(or_throw(lab::parse_age_profile(a)));
            c.data = or_throw(data_spec::parse(o->data, o->dedupe, o->seed));
            struct stat st;
            if (::stat(o->out.c_str(), &st) != 0) {  // made, as mkdir -p would
              std::error_code ec;
              std::filesystem::create_directories(o->out, ec);
              if (ec) throw trace_error(fmt::format("-o {}: {}", o->out, ec.message()));
            } else if (!S_ISDIR(st.st_mode)) {
              throw trace_error(fmt::format("-o {}: not a directory", o->out));
            }
            for (const char* name : {"/compare.json", "/compare.html"})
              if (!o->force && ::stat((o->out + name).c_str(), &st) == 0)
                throw trace_error(
                    fmt::format("{}{} exists (use --force to overwrite it)", o->out, name));
            // read before the long part: a missing chart library fails now, not after it
            const std::string chart_js = or_throw(lab::chart_js_source());
            c.cancel = &stop_on_signals();
            c.say = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
            const lab::compare_outcome r = or_throw(lab::run_compare(c));
            write_file(o->out + "/compare.json", r.result.dump(2) + "\n");
            write_file(o->out + "/compare.html", lab::compare_html(r.result, chart_js));
            fmt::print("{}", lab::compare_table(r.result));
            const lab::compare_cost& cost = r.cost;
            const uint64_t own = r.wall_ns - std::min(r.wall_ns, cost.work_ns());
            fmt::print(
                stderr,
                "compare: {} in {:.1f} s: mkfs+mount {:.1f} s, prepare {:.1f} s, replay "
                "{:.1f} s, sync {:.1f} s, verify {:.1f} s, unmount {:.1f} s{}{}, compare "
                "itself {:.1f} s ({:.1f}%)\n",
                o->fs.size() == 1 ? "1 file system" : fmt::format("{} file systems", o->fs.size()),
                r.wall_ns / 1e9, cost.make_ns / 1e9, cost.prepare_ns / 1e9, cost.replay_ns / 1e9,
                cost.sync_ns / 1e9, cost.verify_ns / 1e9, cost.unmake_ns / 1e9,
                c.drop_caches ? fmt::format(", drop caches {:.1f} s", cost.drop_ns / 1e9) : "",
                fmt::format("{}, layout {:.1f} s",
                            cost.age_ns ? fmt::format(", aging {:.1f} s", cost.age_ns / 1e9) : "",
                            cost.layout_ns / 1e9),
                own / 1e9, r.wall_ns ? 100.0 * own / r.wall_ns : 0.0);
            fmt::print(stderr, "compare: wrote {}/compare.json and {}/compare.html\n", o->out,
                       o->out);
            return r.status;
          }};
}

}  // namespace fsrr::cli
