#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "commands.h"
#include "end_state.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "verify.h"

namespace fsrr::cli {

command add_verify(CLI::App& app) {
  struct opts {
    std::string file, target;
    std::vector<std::string> maps;
    bool no_times = false, owners = false, content = false, keep_privileged = false;
    std::string data = "zero";
    double dedupe = 0;
    uint64_t seed = 0;
    size_t max_shown = 50;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "verify", "Check that TARGET holds the end state the trace implies; list the differences");
  sub->add_option("FILE", o->file, "Trace file")->required();
  sub->add_option("TARGET", o->target, "Directory the trace was replayed into")->required();
  sub->add_option("--map", o->maps, "FROM=TO, as given to replay")->allow_extra_args(false);
  sub->add_flag("--no-times", o->no_times, "Do not compare modification times");
  sub->add_flag("--owners", o->owners,
                "Compare owners too (a replay sets them with --owners, as root)");
  sub->add_flag("--keep-privileged", o->keep_privileged,
                "Compare set-uid/set-gid bits and security.*/trusted.* xattrs too (a replay "
                "makes them with --keep-privileged)");
  sub->add_flag("--content", o->content,
                "Compare every file's bytes too: copies equal their sources, the rest the "
                "generated data of --data and --seed, as given to replay");
  sub->add_option("--data", o->data, "The replay's --data: zero, random or compress:RATIO")
      ->capture_default_str();
  sub->add_option("--dedupe", o->dedupe, "The replay's --dedupe");
  sub->add_option("--seed", o->seed, "The replay's --seed");
  sub->add_option("--max", o->max_shown, "Differences to print at most")->capture_default_str();
  return {sub, [o] {
            std::vector<map_rule> maps;
            data_spec spec;
            for (const auto& m : o->maps) maps.push_back(or_throw(parse_map(m)));
            spec = or_throw(data_spec::parse(o->data, o->dedupe, o->seed));
            trace_reader trace = or_throw(trace_reader::open(o->file));
            const target_root target =
                or_throw(target_root::open(o->target, maps, root_layout_of(trace)));
            // The differences with the content generated as `with` makes it (none: not looked at).
            auto check = [&](const data_spec* with, size_t* checked) {
              std::optional<data_source> data;
              if (with) data.emplace(*with);
              verify_options vo;
              vo.owners = o->owners;
              vo.keep_privileged = o->keep_privileged;
              vo.times = !o->no_times;
              vo.content = data ? &*data : nullptr;
              comparer c(target, vo);
              if (trace.summary().events > 0)
                or_throw(check_end_state(trace, c, with ? model_content::yes : model_content::no));
              else
                c.check(expected_from_tree(trace));
              auto found = c.finish();
              if (checked) *checked = c.checked();
              return found;
            };
            size_t checked = 0;
            const auto diffs = check(o->content ? &spec : nullptr, &checked);
            // The trace does not say which --data the replay wrote: when only contents differ,
            // look whether another common mode makes them all match, and say so.
            // (Zeros are zeros in every mode: a "zeros expected" no other mode mends.)
            const bool only_content =
                o->content && !diffs.empty() &&
                std::all_of(diffs.begin(), diffs.end(), [](const difference& d) {
                  return d.what.starts_with("content differs") &&
                         !d.what.ends_with("zeros expected");
                });
            std::string hint;
            if (only_content) {
              // the given mode with the default seed, then each other mode with the given
              // seed: three verifies more at most, and only when verify failed anyway
              std::vector<std::pair<std::string, uint64_t>> tries;
              if (o->seed != 0) tries.emplace_back(o->data, 0);
              for (const char* mode : {"zero", "random", "compress:2"})
                if (mode != o->data) tries.emplace_back(mode, o->seed);
              for (const auto& [mode, seed] : tries) {
                const data_spec other = or_throw(data_spec::parse(mode, o->dedupe, seed));
                if (check(&other, nullptr).empty()) {
                  hint = fmt::format("every content matches --data {} --seed {}{}: the replay "
                                     "was given that",
                                     mode, seed,
                                     o->dedupe ? fmt::format(" --dedupe {}", o->dedupe) : "");
                  break;
                }
              }
              if (hint.empty())
                hint = fmt::format("no content matches --data zero, random or compress:2 with "
                                   "--seed {}: give verify the replay's --data, --dedupe and "
                                   "--seed",
                                   o->seed);
            }
            for (size_t i = 0; i < diffs.size() && i < o->max_shown; ++i)
              fmt::print("{}: {}\n", target.shown(diffs[i].path), diffs[i].what);
            if (diffs.size() > o->max_shown)
              fmt::print("... and {} more\n", diffs.size() - o->max_shown);
            if (!diffs.empty()) {
              fmt::print(stderr, "fsrr: verify: {} of {} entries differ\n", diffs.size(), checked);
              if (!hint.empty()) fmt::print(stderr, "fsrr: verify: {}\n", hint);
              return 1;
            }
            fmt::print("verify: all {} entries match\n", checked);
            return 0;
          }};
}

}  // namespace fsrr::cli
