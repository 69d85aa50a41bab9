#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aging.h"
#include "command.h"
#include "commands.h"
#include "fs_spec.h"
#include "made_fs.h"
#include "trace_error.h"

namespace fsrr::cli {
namespace {

// The image mounted on a directory of its own for as long as it lives; unmounted (and the
// directory removed) whatever happens.
class mounted_image {
 public:
  static mounted_image mount(const std::string& image, const lab::fs_layer& l) {
    mounted_image m;
    char dir[] = "/dev/shm/fsrr-age.XXXXXX";
    if (!::mkdtemp(dir)) throw trace_error(fmt::format("mkdtemp: {}", std::strerror(errno)));
    m.dir_ = dir;
    const lab::command_result r = lab::run_command(
        {"mount", "-o", "loop,nosuid,nodev" + (l.mount_opts.empty() ? "" : "," + l.mount_opts),
         image, m.dir_});
    if (r.status != 0) throw trace_error(fmt::format("mount {}: {}", image, r.output));
    m.mounted_ = true;
    const lab::command_result dev = lab::run_command({"findmnt", "-n", "-o", "SOURCE", m.dir_});
    m.device_ = dev.output.substr(0, dev.output.find('\n'));
    return m;
  }
  mounted_image() = default;
  mounted_image(mounted_image&& o) noexcept
      : dir_(std::move(o.dir_)), device_(std::move(o.device_)), mounted_(o.mounted_) {
    o.mounted_ = false;
    o.dir_.clear();
  }
  ~mounted_image() {
    if (mounted_ && lab::run_command({"umount", dir_}, {.keep_output = false}).status != 0)
      lab::run_command({"umount", "-l", dir_}, {.keep_output = false});
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  // Unmounted now, or an error (then detached lazily, so that nothing stays in the way).
  void unmount() {
    if (!mounted_) return;
    mounted_ = false;
    const lab::command_result r = lab::run_command({"umount", dir_});
    if (r.status != 0) {
      lab::run_command({"umount", "-l", dir_}, {.keep_output = false});
      throw trace_error(fmt::format("umount {}: {}", dir_, r.output.substr(0, r.output.find('\n'))));
    }
  }
  const std::string& dir() const { return dir_; }
  const std::string& device() const { return device_; }

 private:
  std::string dir_, device_;
  bool mounted_ = false;
};

}  // namespace

command add_age(CLI::App& app) {
  struct opts {
    std::string spec, image, profile, json;
    bool quiet = false;
  };
  auto o = std::make_shared<opts>();
  auto* sub = app.add_subcommand(
      "age",
      "Make IMAGE, a file system of SPEC (as compare's), and age it: fill it to a share of its "
      "capacity with files of a size distribution, then churn (delete a quarter, write anew, "
      "append) N rounds, all from a seed; then measure its free-space fragments and the layout "
      "of what aging wrote. Reuse it: mount it, or replay onto a copy");
  sub->add_option("SPEC", o->spec, "File system (KIND[:mkfs=OPTS][:mount=OPTS][:size=SIZE])")
      ->required();
  sub->add_option("IMAGE", o->image, "Image file to create (refused if it exists)")->required();
  sub->add_option("--age", o->profile,
                  "fill=PCT[,churn=N][,sizes=backup|home|maildir|mixed|trace:FILE][,seed=S]")
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
            if (profile.fill <= 0) throw trace_error("--age none: nothing to age");
            const lab::fs_layer& l = spec.layers[0];
            or_throw(lab::make_image(o->image, l.size ? l.size : lab::min_image_bytes(l.kind)));
            struct remove_on_error {  // a half-made image is not one to reuse
              const std::string& path;
              bool done = false;
              ~remove_on_error() {
                if (!done) ::unlink(path.c_str());
              }
            } guard{o->image};
            const auto argv = lab::mkfs_argv(l, o->image);
            if (auto r = lab::run_command(argv); r.status != 0)
              throw trace_error(fmt::format("{} failed: {}", argv[0], r.output.substr(0, r.output.find('\n'))));
            nlohmann::json j;
            lab::age_result aged;
            lab::layout_stats layout;
            lab::free_space free;
            {
              mounted_image m = mounted_image::mount(o->image, l);
              const bool tty = ::isatty(2);
              std::function<void(const std::string&)> say;
              if (!o->quiet)
                say = [tty](const std::string& line) {
                  if (tty)
                    fmt::print(stderr, "\r\033[K{}", line);
                  else
                    fmt::print(stderr, "{}\n", line);
                };
              aged = or_throw(lab::age(m.dir(), profile, &stop_on_signals(), say));
              if (!o->quiet && tty) fmt::print(stderr, "\n");
              layout = or_throw(lab::layout_of(m.dir() + "/.fsrr-aged"));
              m.unmount();
            }
            // read from the unmounted image: mounted, its bitmaps on disk may be behind
            free = lab::free_space_of(l.kind, o->image);
            guard.done = true;
            fmt::print("age: {} {}: {}: {} files, {:.1f} MiB, {:.1f}% full after {} churn "
                       "rounds ({} written, {} deleted, {} appends) in {:.1f} s{}\n",
                       o->spec, o->image, profile.text, aged.files, aged.bytes / 1048576.0,
                       aged.fill * 100, profile.churn, aged.written, aged.deleted, aged.appends,
                       aged.wall_ns / 1e9,
                       aged.full_early ? " (full before the fill: no space or no inode left)" : "");
            fmt::print("age: free space in {} pieces; the aged files' layout score {:.3f}, "
                       "{:.2f} extents per file, {:.2f} per MiB\n",
                       free.fragments < 0 ? std::string("(no tool for " + l.kind + ")")
                                          : std::to_string(free.fragments),
                       layout.score(), layout.extents_per_file(), layout.extents_per_mib());
            if (!o->json.empty()) {
              nlohmann::json hist = nlohmann::json::array();
              for (const auto& [low, n] : free.histogram) hist.push_back({{"from_bytes", low}, {"count", n}});
              j = {{"spec", o->spec},
                   {"image", o->image},
                   {"age", profile.text},
                   {"files", aged.files},
                   {"bytes", aged.bytes},
                   {"written", aged.written},
                   {"deleted", aged.deleted},
                   {"appends", aged.appends},
                   {"fill", aged.fill},
                   {"full_early", aged.full_early},
                   {"wall_ns", aged.wall_ns},
                   {"free_space_fragments",
                    free.fragments < 0 ? nlohmann::json() : nlohmann::json(free.fragments)},
                   {"free_space_histogram", hist},
                   {"layout",
                    {{"score", layout.score()},
                     {"extents_per_file", layout.extents_per_file()},
                     {"extents_per_mib", layout.extents_per_mib()}}}};
              std::ofstream out(o->json);
              out << j.dump(2) << "\n";
              if (!out.flush()) throw trace_error(fmt::format("{}: cannot write it", o->json));
            }
            return 0;
          }};
}

}  // namespace fsrr::cli
