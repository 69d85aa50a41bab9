#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "compare_html.h"
#include "crashtest.h"
#include "trace_error.h"

namespace fsrr::cli {
namespace {

// Each file system's first findings (a few: crashtest.json has up to 10 of each kind), then
// the table, last, so that it stays on the screen.
std::string table(const std::vector<lab::crash_fs_result>& all) {
  constexpr size_t shown = 5;
  std::string t;
  for (const auto& r : all) {
    uint64_t total = 0;
    for (const auto& [kind, n] : r.counts) total += n;
    if (!total && !r.replay_mismatches) continue;
    t += fmt::format("{}:\n", r.name);
    for (size_t k = 0; k < r.first.size() && k < shown; ++k) {
      const lab::crash_finding& x = r.first[k];
      const std::string cut = fmt::format("{} #{}", x.op, x.point);
      t += fmt::format("  {} {}{}{}{}\n", x.kind, x.path.empty() ? "" : x.path + ": ",
                       "after " + cut,
                       x.promised.empty() ? ""
                       : x.promised == cut ? ", which promised it"
                                           : ", promised by " + x.promised,
                       x.found.empty() ? "" : ": " + x.found);
      if (x.reorder) t.insert(t.size() - 1, fmt::format(" (writes in flight reordered, subset {})", x.reorder));
    }
    if (total > std::min(r.first.size(), shown))
      t += fmt::format("  ... {} findings in all\n", total);
    if (!r.first_state.empty())
      t += fmt::format("  the first state with a finding, as the power cut left it: {}\n",
                       r.first_state);
    if (r.replay_mismatches)
      t += fmt::format("  the replay had {} results other than recorded, which the oracle "
                       "assumes\n",
                       r.replay_mismatches);
  }
  size_t w = 11;
  for (const auto& r : all) w = std::max(w, r.name.size());
  t += fmt::format("{:<{}} {:>7} {:>7} {:>13} {:>12} {:>12} {:>18} {:>9}\n", "file system", w,
                   "points", "states", "lost_durable", "unmountable", "fsck_errors",
                   "rename_not_atomic", "states/s");
  for (const auto& r : all) {
    if (!r.error.empty()) {
      t += fmt::format("{:<{}} could not run: {}\n", r.name, w, r.error);
      continue;
    }
    t += fmt::format("{:<{}} {:>7} {:>7} {:>13} {:>12} {:>12} {:>18} {:>9.1f}\n", r.name, w,
                     r.points, r.states, r.counts.at("lost_durable"), r.counts.at("unmountable"),
                     r.counts.at("fsck_errors"), r.counts.at("rename_not_atomic"),
                     r.check_ns ? r.states / (r.check_ns / 1e9) : 0.0);
  }
  return t;
}

}  // namespace

command add_crashtest(CLI::App& app) {
  struct opts {
    std::string file, out, images, points = "durable", data = "random";
    unsigned reorder = 0;
    std::vector<std::string> fs;
    double dedupe = 0;
    uint64_t seed = 0;
    bool force = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "crashtest",
      "Replay a trace on each file system with every block write logged, cut the power after "
      "each op that promised durability (or those --points names), and check what survives: "
      "exit 4 on any finding");
  sub->add_option("FILE", o->file, "Trace file")->required()->check(CLI::ExistingFile);
  sub->add_option("--fs", o->fs, "A file system to test (SPEC as compare's; repeatable)")
      ->required()
      ->allow_extra_args(false);
  sub->add_option("--points", o->points,
                  "Where the power is cut: durable (after each fsync, fdatasync, sync, syncfs "
                  "and O_SYNC/O_DSYNC write), every:N (after every N-th op) or seq:A,B,... "
                  "(after those ops, numbered from 0 as crashtest's findings and export --shell "
                  "number them)")
      ->capture_default_str();
  sub->add_option("--reorder", o->reorder,
                  "At each crash state, N more: a seeded random subset of the writes in flight "
                  "since the last flush on top of it (--seed)")
      ->check(CLI::Range(0, 1000));
  sub->add_option("--data", o->data, "Generated file contents: zero, random or compress:RATIO")
      ->capture_default_str();
  sub->add_option("--dedupe", o->dedupe, "Percentage of 4 KiB blocks that repeat shared blocks");
  sub->add_option("--seed", o->seed, "Seed of the generated data and of --reorder's subsets");
  sub->add_option("--images", o->images,
                  "Directory for the images, logs and mount points, made if missing (default: "
                  "a new one in /dev/shm)");
  sub->add_option("-o,--output", o->out,
                  "Directory for crashtest.json, crashtest.html and, for each file system with a "
                  "finding, the first such state's image (made if missing)");
  sub->add_flag("-f,--force", o->force, "Overwrite crashtest.json and crashtest.html in it");
  return {sub, [o] {
            lab::crash_options c;
            c.points = or_throw(lab::parse_crash_points(o->points));
            c.reorder = o->reorder;
            c.seed = o->seed;
            c.trace = o->file;
            for (const auto& f : o->fs) c.specs.push_back(or_throw(lab::parse_fs_spec(f)));
            c.data = or_throw(data_spec::parse(o->data, o->dedupe, o->seed));
            c.images = o->images;
            c.cancel = &stop_on_signals();
            std::string json_path, chart_js;
            if (!o->out.empty()) {
              std::error_code ec;
              std::filesystem::create_directories(o->out, ec);
              if (ec) throw trace_error(fmt::format("-o {}: {}", o->out, ec.message()));
              json_path = o->out + "/crashtest.json";
              c.keep = o->out;
              for (const std::string& path : {json_path, o->out + "/crashtest.html"}) {
                struct stat st;
                if (!o->force && ::stat(path.c_str(), &st) == 0)
                  throw trace_error(fmt::format("{} exists (use --force to overwrite it)", path));
              }
              chart_js = or_throw(lab::chart_js_source());
            }
            const auto results = or_throw(lab::crashtest(c));
            fmt::print("{}", table(results));
            if (!json_path.empty()) {
              const nlohmann::json j = lab::crashtest_json(c, results);
              write_file(json_path, j.dump(2) + "\n");
              write_file(o->out + "/crashtest.html", lab::crashtest_html(j, chart_js));
              fmt::print(stderr, "crashtest: wrote {} and {}/crashtest.html\n", json_path, o->out);
            }
            bool found = false, failed = false;
            for (const auto& r : results) {
              failed = failed || !r.error.empty();
              for (const auto& [kind, n] : r.counts) found = found || n > 0;
            }
            return found ? 4 : failed ? 1 : 0;
          }};
}

}  // namespace fsrr::cli
