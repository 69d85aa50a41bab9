#include "crashtest.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "backend.h"
#include "block_log.h"
#include "clock.h"
#include "command.h"
#include "compare.h"
#include "durability.h"
#include "made_fs.h"
#include "replay.h"
#include "trace_reader.h"
#include "verify.h"

namespace fsrr::lab {
namespace {

constexpr uint64_t default_image_bytes = 512ull << 20;  // mkfs.xfs refuses below 300 MB
constexpr size_t max_listed = 10;

// Where the log stood when an op that promised durability returned.
struct crash_point {
  uint64_t seq = 0;
  uint64_t logged = 0;
};

// Replays with every op after a durability point in the recording after it here too, and
// notes each point.
class crash_point_backend final : public replay_backend {
 public:
  explicit crash_point_backend(const logged_device& dev) : dev_(dev) {}
  replay_stats run(trace_reader& trace, const target_root& target, const data_source& data,
                   engine_options options) override {
    options.recorded_order = true;
    options.after_durable = [this](uint64_t seq) {
      const uint64_t logged = dev_.logged();
      std::lock_guard lock(mu_);
      points_.push_back({seq, logged});
    };
    return replay_events(trace, target, data, options, choose_loop(trace, options));
  }
  std::vector<crash_point> points() {
    std::sort(points_.begin(), points_.end(),
              [](const crash_point& a, const crash_point& b) { return a.seq < b.seq; });
    return points_;
  }

 private:
  const logged_device& dev_;
  std::mutex mu_;
  std::vector<crash_point> points_;
};

// The checker of `kind`, read-only, on an unmounted image.
std::vector<std::string> checker(const std::string& kind, const std::string& image) {
  if (kind.rfind("ext", 0) == 0) return {"e2fsck", "-fn", image};
  if (kind == "xfs") return {"xfs_repair", "-n", "-f", "-P", image};  // -P: no prefetch, faster here
  if (kind == "btrfs") return {"btrfs", "check", "--readonly", image};
  return {};
}

std::string op_name(const std::vector<op>& kinds, uint64_t seq) {
  return seq < kinds.size() ? std::string(name(kinds[seq])) : std::string("?");
}

std::string first_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

// mount(8)'s generic options as mount(2) flags; the rest is the file system's own data.
std::pair<unsigned long, std::string> mount_flags(const std::string& options) {
  static const std::pair<const char*, unsigned long> generic[] = {
      {"ro", MS_RDONLY},       {"nosuid", MS_NOSUID},     {"nodev", MS_NODEV},
      {"noexec", MS_NOEXEC},   {"sync", MS_SYNCHRONOUS},  {"dirsync", MS_DIRSYNC},
      {"noatime", MS_NOATIME}, {"nodiratime", MS_NODIRATIME}, {"relatime", MS_RELATIME},
      {"strictatime", MS_STRICTATIME}, {"lazytime", MS_LAZYTIME}};
  unsigned long flags = 0;
  std::string data;
  size_t at = 0;
  while (at <= options.size() && !options.empty()) {
    const size_t comma = std::min(options.find(',', at), options.size());
    const std::string word = options.substr(at, comma - at);
    at = comma + 1;
    if (word.empty() || word == "rw" || word == "defaults") continue;
    bool known = false;
    for (const auto& [name, flag] : generic)
      if (word == name) flags |= flag, known = true;
    if (!known) data += (data.empty() ? "" : ",") + word;
  }
  return {flags, data};
}

// The crash states, one after another, in one image behind one loop device, mounted with
// mount(2): a state is a copy of the image's data, the device's cache dropped before each mount.
class state_device {
 public:
  ~state_device() {
    if (fd_ >= 0) ::close(fd_);
    if (!loop_.empty()) run_command({"losetup", "-d", loop_}, {.keep_output = false});
  }
  result<void> attach(const std::string& image) {
    command_result r = run_command({"losetup", "--find", "--show", image});
    if (r.status != 0) return failure("losetup {}: {}", image, first_line(r.output));
    while (!r.output.empty() && r.output.back() == '\n') r.output.pop_back();
    loop_ = r.output;
    fd_ = ::open(loop_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return failure("{}: {}", loop_, std::strerror(errno));
    return {};
  }
  // The state now in the image, mounted (the journal recovers) on `at`.
  result<void> mount(const std::string& kind, const std::string& options, const std::string& at) {
    ::ioctl(fd_, BLKFLSBUF, 0);  // the previous state's blocks are not this one's
    const auto [flags, data] = mount_flags(options);
    if (::mount(loop_.c_str(), at.c_str(), kind.c_str(), flags, data.c_str()) != 0)
      return failure("mount: {}", std::strerror(errno));
    return {};
  }
  result<void> unmount(const std::string& at) {
    if (::umount2(at.c_str(), 0) != 0) {
      const int err = errno;
      ::umount2(at.c_str(), MNT_DETACH);
      return failure("umount {}: {}", at, std::strerror(err));
    }
    ::ioctl(fd_, BLKFLSBUF, 0);
    return {};
  }

 private:
  std::string loop_;
  int fd_ = -1;
};


// Everything of one file system: made, replayed on the logged device, torn down; then each
// crash state built and checked.
class one_fs {
 public:
  one_fs(const crash_options& o, const fs_spec& spec, const std::string& dir)
      : o_(o), layer_(spec.layers.front()), dir_(dir) {}
  // Whatever an error left: unmounted, then the logged device detached (dev_'s destructor).
  ~one_fs() {
    for (const std::string& m : mounted_) run_command({"umount", m}, {.keep_output = false});
  }

  result<void> record_log(crash_fs_result& out) {
    const std::string image = dir_ + "/fs.img";
    const uint64_t size = layer_.size ? layer_.size : default_image_bytes;
    {
      const int fd = ::open(image.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        if (fd >= 0) ::close(fd);
        return failure("image {}: {}", image, std::strerror(errno));
      }
      ::close(fd);
    }
    fs_layer l = layer_;
    // ext4's inode tables written by mkfs, not by a kernel thread while the workload runs
    if (l.kind == "ext4") l.mkfs_opts = "-E lazy_itable_init=0,lazy_journal_init=0 " + l.mkfs_opts;
    const auto argv = mkfs_argv(l, image);
    if (auto r = run_command(argv); r.status != 0)
      return failure("{} failed: {}", argv[0], first_line(r.output));
    base_ = dir_ + "/base.img";
    FSRR_TRY(copy_sparse(image, base_));
    FSRR_TRY(mkdir_in("log"));
    auto made = logged_device::make(image, dir_ + "/log");
    if (!made) return tl::unexpected(made.error());
    dev_ = std::move(*made);
    logged_device* dev = dev_.get();
    const std::string mnt = dir_ + "/replay.mnt";
    FSRR_TRY(mkdir_in("replay.mnt"));
    FSRR_TRY(mount(dev->device(), mnt));
    const std::string target = mnt + "/replay";
    ::mkdir(target.c_str(), 0755);
    std::vector<crash_point> points;
    {
      auto trace = trace_reader::open(o_.trace);
      if (!trace) return tl::unexpected(trace.error());
      replay_options ro;
      ro.target = target;
      ro.data = o_.data;
      ro.timing = "afap";
      ro.same_engines = false;  // io_uring's fsync completes off the thread: as a syscall
      ro.mmap_as_write = true;
      auto job = replay_job::open(*trace, ro);
      if (!job) return tl::unexpected(job.error());
      FSRR_TRY(job->prepare());
      // the initial tree on the medium before the workload starts: promised from the start
      const int fd = ::open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        ::syncfs(fd);
        ::close(fd);
      }
      crash_point_backend backend(*dev);
      const replay_outcome outcome = job->run(backend);
      if (outcome.status != 0 && !outcome.report.replay.stopped.empty())
        return failure("the replay stopped: {}", outcome.report.replay.stopped);
      points = backend.points();
    }
    FSRR_TRY(unmount(mnt));
    FSRR_TRY(dev->detach());
    auto log = dev->records();
    if (!log) return tl::unexpected(log.error());
    log_ = std::move(*log);
    data_ = dev->data_path();
    points_ = std::move(points);
    for (const block_record& r : log_) (r.flush ? out.log_flushes : out.log_writes)++;
    return {};
  }

  result<void> check_states(crash_fs_result& out) {
    const uint64_t start = monotonic_ns();
    auto trace = trace_reader::open(o_.trace);
    if (!trace) return tl::unexpected(trace.error());
    durability_oracle oracle(*trace);
    std::vector<op> kinds;  // by seq
    auto events = trace->events();
    event e;
    const data_source data(o_.data);
    const std::string state = dir_ + "/state.img", scratch = dir_ + "/scratch.img",
                      mnt = dir_ + "/crash.mnt";
    FSRR_TRY(copy_sparse(base_, state));
    FSRR_TRY(mkdir_in("crash.mnt"));
    const int state_fd = ::open(state.c_str(), O_RDWR | O_CLOEXEC);
    const int data_fd = ::open(data_.c_str(), O_RDONLY | O_CLOEXEC);
    size_t applied = 0;
    state_device states;
    for (size_t i = 0; i < points_.size();) {
      // the state a power cut leaves at this point: every write before the last flush
      size_t cut = std::min<size_t>(points_[i].logged, log_.size());
      while (cut > 0 && !log_[cut - 1].flush) --cut;
      if (cut > applied) {
        if (auto r = apply_records(state_fd, data_fd, log_, applied, cut); !r) {
          ::close(state_fd), ::close(data_fd);
          return r;
        }
        applied = cut;
      }
      FSRR_TRY(copy_sparse(state, scratch));
      if (out.states++ == 0) FSRR_TRY(states.attach(scratch));
      const bool mounted = states.mount(layer_.kind, layer_.mount_opts, mnt).has_value();
      // every point this state stands for
      for (; i < points_.size(); ++i) {
        size_t c = std::min<size_t>(points_[i].logged, log_.size());
        while (c > 0 && !log_[c - 1].flush) --c;
        if (c != cut) break;
        ++out.points;
        while (oracle.next_seq() <= points_[i].seq && events.next(e)) {
          if (info(e.kind).cls != op_class::stream) kinds.push_back(e.kind);
          oracle.apply(e);
        }
        if (!mounted) {
          add(out, {"unmountable", points_[i].seq, op_name(kinds, points_[i].seq), "", "", "",
                    "mount failed"});
          continue;
        }
        check_point(out, oracle.promised(), mnt + "/replay", data, points_[i].seq, kinds);
      }
      if (mounted) FSRR_TRY(states.unmount(mnt));
      if (const auto argv = checker(layer_.kind, scratch); !argv.empty()) {
        const command_result r = run_command(argv);
        if (r.status != 0)
          add(out, {"fsck_errors", points_[i - 1].seq, op_name(kinds, points_[i - 1].seq), "", "",
                    "", first_line(r.output)});
      }
    }
    ::close(state_fd);
    ::close(data_fd);
    for (auto& f : initial_first_)
      if (out.first.size() < max_listed) out.first.push_back(std::move(f));
    out.check_ns = monotonic_ns() - start;
    return {};
  }

 private:
  result<void> mkdir_in(const std::string& name) {
    if (::mkdir((dir_ + "/" + name).c_str(), 0700) != 0)
      return failure("mkdir {}/{}: {}", dir_, name, std::strerror(errno));
    return {};
  }
  result<void> mount(const std::string& device, const std::string& at) {
    std::vector<std::string> argv{"mount"};
    if (!layer_.mount_opts.empty()) argv.insert(argv.end(), {"-o", layer_.mount_opts});
    argv.push_back(device);
    argv.push_back(at);
    const command_result r = run_command(argv);
    if (r.status != 0) return failure("mount {}: {}", at, first_line(r.output));
    mounted_.push_back(at);
    return {};
  }
  result<void> unmount(const std::string& at) {
    const command_result r = run_command({"umount", at});
    std::erase(mounted_, at);
    if (r.status != 0) return failure("umount {}: {}", at, first_line(r.output));
    return {};
  }
  // A file lost is counted once, at the first point it was found lost; the listing names
  // the workload's promises before the initial tree's.
  void add(crash_fs_result& out, crash_finding f, bool initial = false) {
    if ((f.kind == "lost_durable" || f.kind == "rename_not_atomic") &&
        !lost_.insert(f.kind + f.path).second)
      return;
    ++out.counts[f.kind];
    auto& list = initial ? initial_first_ : out.first;
    if (list.size() < max_listed) list.push_back(std::move(f));
  }

  void check_point(crash_fs_result& out, const std::vector<promised_file>& promised,
                   const std::string& target_dir, const data_source& data, uint64_t point,
                   const std::vector<op>& kinds) {
    verify_options vo;
    vo.times = false;
    vo.threads = 1;
    vo.content = &data;
    auto target = target_root::open(target_dir);
    // Every promise looked at in one pass (each compare() sets up buffers of its own); the
    // other names and versions only for the promises it found broken.
    std::map<std::string, std::string> broken;  // path -> what was found
    if (target) {
      expected_state all;
      for (const promised_file& p : promised) all.emplace(p.path, p.entry);
      for (const difference& d : compare(all, *target, vo)) broken.emplace(d.path, d.what);
    }
    for (const promised_file& p : promised) {
      if (target && !broken.count(p.path)) continue;
      std::string found;
      auto look = [&](const std::string& path) {
        if (!target) {
          found = "the replay's directory is not there";
          return false;
        }
        if (path == p.path && !broken.count(path)) return true;
        const auto diffs = compare({{path, p.entry}}, *target, vo);
        if (diffs.empty()) return true;
        found = diffs.front().what;
        return false;
      };
      if (p.replaced) {
        std::string found_new;
        if (look(p.path)) continue;
        found_new = found;
        if (std::any_of(p.before.begin(), p.before.end(), [&](const expected_entry& b) {
              return compare({{p.path, b}}, *target, vo).empty();
            }))
          continue;
        add(out, {"rename_not_atomic", point, op_name(kinds, point), p.path,
                  fmt::format("{} #{}", op_name(kinds, p.by), p.by),
                  fmt::format("the old file or the new ({} bytes)", p.entry.size),
                  "neither the old file nor the new: " + found_new});
        continue;
      }
      if (look(p.path) || (!p.old_path.empty() && look(p.old_path))) continue;
      const std::string by = p.initial && p.by == 0
                                 ? "the initial tree, synced before the workload"
                                 : fmt::format("{} #{}", op_name(kinds, p.by), p.by);
      add(out,
          {"lost_durable", point, op_name(kinds, point), p.path, by,
           fmt::format("{} bytes", p.entry.size), found},
          p.initial && p.by == 0);
    }
  }

  const crash_options& o_;
  const fs_layer& layer_;
  std::unique_ptr<logged_device> dev_;
  std::string dir_, base_, data_;
  std::vector<block_record> log_;
  std::vector<crash_point> points_;
  std::vector<std::string> mounted_;
  std::set<std::string> lost_;
  std::vector<crash_finding> initial_first_;
};

}  // namespace

result<std::vector<crash_fs_result>> crashtest(const crash_options& options) {
  if (::geteuid() != 0) return failure("crashtest makes and mounts file systems: run it as root");
  if (options.specs.empty()) return failure("crashtest: give at least one --fs");
  crash_options o = options;
  bool own_images = false;
  if (o.images.empty()) {
    char tmpl[] = "/dev/shm/fsrr-crashtest.XXXXXX";  // crash states are copied: in memory
    if (!::mkdtemp(tmpl)) return failure("mkdtemp: {}", std::strerror(errno));
    o.images = tmpl;
    own_images = true;
  } else if (::mkdir(o.images.c_str(), 0700) == 0) {
    own_images = true;
  } else if (struct stat st; errno != EEXIST || ::stat(o.images.c_str(), &st) != 0 ||
                             !S_ISDIR(st.st_mode)) {
    return failure("--images {}: not a directory fsrr can use", o.images);
  }
  struct remove_dir {
    std::string path;
    bool own;
    ~remove_dir() {
      if (own) ::rmdir(path.c_str());
    }
  } scratch{o.images, own_images};
  std::vector<crash_fs_result> results;
  for (size_t k = 0; k < o.specs.size(); ++k) {
    const fs_spec& spec = o.specs[k];
    if (spec.existing() || spec.layers.size() != 1 || spec.layers[0].kind == "tmpfs")
      return failure("crashtest --fs {}: a file system on a block device fsrr makes (ext4, xfs, "
                     "btrfs, ...), not tmpfs, a stack or a directory",
                     spec.name);
    const uint64_t start = monotonic_ns();
    crash_fs_result out;
    out.name = spec.name;
    out.kind = spec.layers[0].kind;
    out.mkfs_options = spec.layers[0].mkfs_opts;
    out.mount_options = spec.layers[0].mount_opts;
    for (const auto& kind : crash_kinds) out.counts[kind] = 0;
    const std::string dir = fmt::format("{}/{}-{}", o.images, k, spec.layers[0].kind);
    if (::mkdir(dir.c_str(), 0700) != 0)
      return failure("mkdir {}: {}", dir, std::strerror(errno));
    {
      one_fs fs(o, spec, dir);
      auto r = fs.record_log(out);
      if (r) r = fs.check_states(out);
      if (!r) out.error = r.error().message;
    }
    run_command({"rm", "-rf", "--one-file-system", dir}, {.keep_output = false});
    out.wall_ns = monotonic_ns() - start;
    results.push_back(std::move(out));
  }
  return results;
}

nlohmann::json crashtest_json(const std::string& trace, const std::vector<crash_fs_result>& all) {
  nlohmann::json j = {{"trace", trace}, {"system", machine_info()}, {"points", "durable"},
                      {"fs", nlohmann::json::array()}};
  for (const auto& r : all) {
    nlohmann::json f = {{"name", r.name},
                        {"kind", r.kind},
                        {"mkfs", r.mkfs_options},
                        {"mount", r.mount_options},
                        {"crash_points", r.points},
                        {"states", r.states},
                        {"log_writes", r.log_writes},
                        {"log_flushes", r.log_flushes},
                        {"check_ns", r.check_ns},
                        {"states_per_s", r.check_ns ? r.states * 1e9 / r.check_ns : 0.0},
                        {"wall_ns", r.wall_ns}};
    for (const auto& kind : crash_kinds) {
      nlohmann::json first = nlohmann::json::array();
      for (const auto& x : r.first)
        if (x.kind == kind)
          first.push_back({{"seq", x.point},
                           {"op", x.op},
                           {"path", x.path},
                           {"promised_by", x.promised},
                           {"expected", x.expected},
                           {"found", x.found}});
      const auto n = r.counts.find(kind);
      f["findings"][kind] = {{"count", n == r.counts.end() ? 0 : n->second},
                             {"first", std::move(first)}};
    }
    if (!r.error.empty()) f["error"] = r.error;
    j["fs"].push_back(std::move(f));
  }
  return j;
}

}  // namespace fsrr::lab
