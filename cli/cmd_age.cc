#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aged_image.h"
#include "command.h"
#include "commands.h"
#include "fs_spec.h"
#include "made_fs.h"
#include "trace_error.h"

namespace fsrr::cli {

command add_age(CLI::App& app) {
  struct opts {
    std::string spec, image, profile, json;
    bool quiet = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "age",
      "Make IMAGE, a file system of SPEC (as compare's), and age it: fill it to a share of its "
      "capacity with files of a size distribution, then churn N rounds (write new files and "
      "append until nearly full, prune back), all from a seed; or replay a recorded workload N "
      "times keeping the last K generations. Then measure its free-space fragments and the "
      "layout of what aging wrote. Reuse it: mount it, or compare --age");
  sub->add_option("SPEC", o->spec, "File system (KIND[:mkfs=OPTS][:mount=OPTS][:size=SIZE])")
      ->required();
  sub->add_option("IMAGE", o->image, "Image file to create (refused if it exists)")->required();
  sub->add_option("--age", o->profile,
                  "fill=PCT[,churn=N][,sizes=backup|home|maildir|mixed|trace:FILE][,seed=S] or "
                  "replay=TRACE[,rounds=N][,keep=K][,seed=S]")
      ->required();
  sub->add_option("--json", o->json, "Write what was made and measured as JSON to this file");
  sub->add_flag("--quiet", o->quiet, "No progress lines");
  return {sub, [o] {
            const lab::fs_spec spec = or_throw(lab::parse_fs_spec(o->spec));
            const lab::age_profile profile = or_throw(lab::parse_age_profile(o->profile));
            if (spec.layers.size() != 1 || spec.layers[0].kind == "tmpfs" || spec.existing())
              throw trace_error(fmt::format("{}: age makes one image of a block file system "
                                            "(ext4, xfs, btrfs...)",
                                            o->spec));
            if (::geteuid() != 0) throw trace_error("age needs root (it makes and mounts a file system)");
            if (!profile.aged()) throw trace_error("--age none: nothing to age");
            const lab::fs_layer& l = spec.layers[0];
            const bool tty = ::isatty(2);
            std::function<void(const std::string&)> say;
            if (!o->quiet)
              say = [tty](const std::string& line) {
                if (tty)
                  fmt::print(stderr, "\r\033[K{}", line);
                else
                  fmt::print(stderr, "{}\n", line);
              };
            const lab::aged_image a = or_throw(lab::make_aged_image(
                l, l.size ? l.size : lab::min_image_bytes(l.kind), profile, o->image,
                &stop_on_signals(), say));
            if (!o->quiet && tty) fmt::print(stderr, "\n");
            fmt::print("age: {} {}: {}: {} files, {:.1f} MiB, {:.1f}% full after {} ({} written, "
                       "{} deleted, {} appends) in {:.1f} s{}\n",
                       o->spec, o->image, profile.text, a.aged.files, a.aged.bytes / 1048576.0,
                       a.aged.fill * 100,
                       profile.replay.empty() ? fmt::format("{} churn rounds", profile.churn)
                                              : fmt::format("{} replays", profile.rounds),
                       a.aged.written, a.aged.deleted, a.aged.appends, a.aged.wall_ns / 1e9,
                       a.aged.full_early ? " (full before the end: no space or no inode left)" : "");
            fmt::print("age: free space in {} pieces; the aged files' layout score {:.3f}, "
                       "{:.2f} extents per file, {:.2f} per MiB\n",
                       a.free.fragments < 0 ? std::string("(no tool for " + l.kind + ")")
                                            : std::to_string(a.free.fragments),
                       a.layout.score(), a.layout.extents_per_file(), a.layout.extents_per_mib());
            if (!o->json.empty()) {
              nlohmann::json j = a.json();
              j.erase("cached");
              j["spec"] = o->spec;
              std::ofstream out(o->json);
              out << j.dump(2) << "\n";
              if (!out.flush()) throw trace_error(fmt::format("{}: cannot write it", o->json));
            }
            return 0;
          }};
}

}  // namespace fsrr::cli
