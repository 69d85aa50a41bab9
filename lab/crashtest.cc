#include "crashtest.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
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
  crash_point_backend(const logged_device& dev, const crash_points& rule)
      : dev_(dev), points_rule_(rule) {}
  replay_stats run(trace_reader& trace, const target_root& target, const data_source& data,
                   engine_options options) override {
    options.recorded_order = true;
    options.crash_point = [this](uint64_t seq, bool durable) { return points_rule_.at(seq, durable); };
    options.after_point = [this](uint64_t seq) {
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
  const crash_points& points_rule_;
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

// A SPEC as a file name: "ext4:mount=barrier=0" -> "ext4_mount_barrier_0".
std::string file_name_of(const std::string& spec) {
  std::string n = spec;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  return n;
}

std::string op_name(const std::vector<op>& kinds, uint64_t seq) {
  return seq < kinds.size() ? std::string(name(kinds[seq])) : std::string("?");
}

// mount(8)'s generic options as mount(2) flags; the rest is the file system's own data.
std::pair<unsigned long, std::string> mount_flags(const std::string& options) {
  struct generic {
    const char* name;
    unsigned long set, clear;
  };
  static const generic table[] = {
      {"ro", MS_RDONLY, 0},           {"rw", 0, MS_RDONLY},
      {"nosuid", MS_NOSUID, 0},       {"suid", 0, MS_NOSUID},
      {"nodev", MS_NODEV, 0},         {"dev", 0, MS_NODEV},
      {"noexec", MS_NOEXEC, 0},       {"exec", 0, MS_NOEXEC},
      {"sync", MS_SYNCHRONOUS, 0},    {"async", 0, MS_SYNCHRONOUS},
      {"dirsync", MS_DIRSYNC, 0},     {"noatime", MS_NOATIME, 0},
      {"atime", 0, MS_NOATIME},       {"nodiratime", MS_NODIRATIME, 0},
      {"diratime", 0, MS_NODIRATIME}, {"relatime", MS_RELATIME, 0},
      {"norelatime", 0, MS_RELATIME}, {"strictatime", MS_STRICTATIME, 0},
      {"lazytime", MS_LAZYTIME, 0},   {"nolazytime", 0, MS_LAZYTIME},
      {"iversion", MS_I_VERSION, 0},  {"noiversion", 0, MS_I_VERSION},
      {"mand", MS_MANDLOCK, 0},       {"nomand", 0, MS_MANDLOCK},
      {"defaults", 0, 0},             {"auto", 0, 0},
      {"noauto", 0, 0},               {"nofail", 0, 0},
      {"user", 0, 0},                 {"nouser", 0, 0},
      {"users", 0, 0},                {"owner", 0, 0},
      {"_netdev", 0, 0},              {"loop", 0, 0}};
  unsigned long flags = 0;
  std::string data;
  size_t at = 0;
  while (at <= options.size() && !options.empty()) {
    const size_t comma = std::min(options.find(',', at), options.size());
    const std::string word = options.substr(at, comma - at);
    at = comma + 1;
    if (word.empty() || word.starts_with("x-")) continue;  // (x-*: for userspace only)
    const generic* g = nullptr;
    for (const generic& t : table)
      if (word == t.name) g = &t;
    if (g)
      flags = (flags | g->set) & ~g->clear;
    else
      data += (data.empty() ? "" : ",") + word;
  }
  return {flags, data};
}

// The crash states, one after another, in one image behind one loop device, mounted with
// mount(2): a state is a copy of the image's data, the device's cache dropped before each mount.
class state_device {
 public:
  ~state_device() {
    if (!mounted_.empty()) ::umount2(mounted_.c_str(), MNT_DETACH);
    if (fd_ >= 0) ::close(fd_);
    if (!loop_.empty()) run_command({"losetup", "-d", loop_}, {.keep_output = false});
  }
  result<void> attach(const std::string& image) {
    command_result r = run_command({"losetup", "--find", "--show", image});
    if (r.status != 0) return failure("losetup {}: {}", image, last_line(r.output));
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
    // (what an untrusted trace made is not executed or opened as a device)
    if (::mount(loop_.c_str(), at.c_str(), kind.c_str(), flags | MS_NOSUID | MS_NODEV,
                data.c_str()) != 0)
      return failure("mount: {}", std::strerror(errno));
    mounted_ = at;
    return {};
  }
  result<void> unmount() {
    const std::string at = std::move(mounted_);
    mounted_.clear();
    if (::umount2(at.c_str(), 0) != 0) {
      const int err = errno;
      ::umount2(at.c_str(), MNT_DETACH);
      return failure("umount {}: {}", at, std::strerror(err));
    }
    ::ioctl(fd_, BLKFLSBUF, 0);
    return {};
  }

 private:
  std::string loop_, mounted_;
  int fd_ = -1;
};

// A file descriptor closed with its scope.
struct owned_fd {
  int fd = -1;
  explicit owned_fd(int f) : fd(f) {}
  ~owned_fd() {
    if (fd >= 0) ::close(fd);
  }
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
};


// Everything of one file system: made, replayed on the logged device, torn down; then each
// crash state built and checked.
class one_fs {
 public:
  one_fs(const crash_options& o, const fs_spec& spec, const std::string& dir)
      : o_(o), layer_(spec.layers.front()), dir_(dir) {}
  // Whatever an error left: unmounted, then the logged device detached (dev_'s destructor).
  ~one_fs() {
    for (const std::string& m : mounted_)
      if (::umount2(m.c_str(), 0) != 0) ::umount2(m.c_str(), MNT_DETACH);
  }

  result<void> record_log(crash_fs_result& out) {
    const std::string image = dir_ + "/fs.img";
    const uint64_t size = layer_.size ? layer_.size : default_image_bytes;
    FSRR_TRY(make_image(image, size));
    fs_layer l = layer_;
    // ext4's inode tables written by mkfs, not by a kernel thread while the workload runs
    if (l.kind == "ext4") l.mkfs_opts = "-E lazy_itable_init=0,lazy_journal_init=0 " + l.mkfs_opts;
    const auto argv = mkfs_argv(l, image);
    if (auto r = run_command(argv); r.status != 0)
      return failure("{} failed: {}", argv[0], last_line(r.output));
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
      ro.cancel = o_.cancel;
      auto job = replay_job::open(*trace, ro);
      if (!job) return tl::unexpected(job.error());
      FSRR_TRY(job->prepare());
      // the initial tree on the medium before the workload starts: promised from the start
      const int fd = ::open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd >= 0) {
        ::syncfs(fd);
        ::close(fd);
      }
      crash_point_backend backend(*dev, o_.points);
      const replay_outcome outcome = job->run(backend);
      if (outcome.status != 0 && !outcome.report.replay.stopped.empty())
        return failure("the replay stopped: {}", outcome.report.replay.stopped);
      // the oracle takes the recorded results: a replay that went otherwise is said
      if (outcome.report.prepare.errors)
        return failure("the initial tree: {} entries could not be made",
                       outcome.report.prepare.errors);
      out.replay_mismatches = outcome.report.replay.mismatches;
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
    layout_ = root_layout_of(*trace);  // where its roots lie beneath the target, as replayed
    std::vector<op> kinds;  // by seq
    auto events = trace->events();
    event e;
    const data_source data(o_.data);
    const std::string state = dir_ + "/state.img", scratch = dir_ + "/scratch.img",
                      mnt = dir_ + "/crash.mnt";
    FSRR_TRY(copy_sparse(base_, state));
    FSRR_TRY(mkdir_in("crash.mnt"));
    owned_fd state_fd(::open(state.c_str(), O_RDWR | O_CLOEXEC));
    owned_fd data_fd(::open(data_.c_str(), O_RDONLY | O_CLOEXEC));
    if (state_fd.fd < 0 || data_fd.fd < 0)
      return failure("crash states in {}: {}", dir_, std::strerror(errno));
    size_t applied = 0;
    state_device states;
    for (size_t i = 0; i < points_.size();) {
      const size_t cut = cut_at(points_[i]);
      if (o_.cancel && o_.cancel->load()) return failure("interrupted");
      // Points in trace order need not have the log in order (several replay threads): a
      // state before the one built is built again from the image as made.
      if (cut < applied) {
        FSRR_TRY(copy_sparse(base_, state));
        applied = 0;
      }
      if (cut > applied) {
        FSRR_TRY(apply_records(state_fd.fd, data_fd.fd, log_, applied, cut));
        applied = cut;
      }
      FSRR_TRY(copy_sparse(state, scratch));
      if (out.states++ == 0) FSRR_TRY(states.attach(scratch));
      const bool mounted = states.mount(layer_.kind, layer_.mount_opts, mnt).has_value();
      // every point this state stands for
      for (; i < points_.size(); ++i) {
        if (cut_at(points_[i]) != cut) break;
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
      if (mounted) FSRR_TRY(states.unmount());
      if (const auto argv = checker(layer_.kind, scratch); !argv.empty()) {
        const command_result r = run_command(argv);
        if (r.status != 0)
          add(out, {"fsck_errors", points_[i - 1].seq, op_name(kinds, points_[i - 1].seq), "", "",
                    "", last_line(r.output)});
      }
      // The first state with a finding, as the power cut left it (before any recovery), for
      // whoever looks into it: mount it, or hand it to the file system's developers.
      if (!o_.keep.empty() && out.first_state.empty() && found_so_far() > 0) {
        out.first_state = fmt::format("{}/{}.img", o_.keep, file_name_of(out.name));
        FSRR_TRY(copy_sparse(state, out.first_state));
      }
      // The writes in flight at the group's last point (after its last flush), a seeded
      // random subset of them at a time on top of the state, in their order: a device may
      // have written any of them before the power went, and a file system that sends its
      // flushes must not care which.
      const size_t upto = std::min<size_t>(points_[i - 1].logged, log_.size());
      // subset k of them on the state, into `into` (the same k, the same subset)
      const auto build = [&](unsigned k, const std::string& into) -> result<void> {
        std::mt19937_64 rng(o_.seed * 0x9e3779b97f4a7c15ull ^ (cut << 20) ^ k);
        FSRR_TRY(copy_sparse(state, into));
        owned_fd into_fd(::open(into.c_str(), O_RDWR | O_CLOEXEC));
        if (into_fd.fd < 0) return failure("{}: {}", into, std::strerror(errno));
        for (size_t j = cut; j < upto; ++j)
          if (rng() & 1) FSRR_TRY(apply_records(into_fd.fd, data_fd.fd, log_, j, j + 1));
        return {};
      };
      for (unsigned k = 1; k <= o_.reorder && upto > cut; ++k) {
        if (o_.cancel && o_.cancel->load()) return failure("interrupted");
        FSRR_TRY(build(k, scratch));
        const uint64_t found_before = found_so_far();
        ++out.states;
        ++out.reordered;
        reorder_now_ = k;
        const uint64_t last = points_[i - 1].seq;
        if (!states.mount(layer_.kind, layer_.mount_opts, mnt)) {
          add(out, {"unmountable", last, op_name(kinds, last), "", "", "", "mount failed"});
        } else {
          check_point(out, oracle.promised(), mnt + "/replay", data, last, kinds);
          FSRR_TRY(states.unmount());
        }
        if (const auto argv = checker(layer_.kind, scratch); !argv.empty()) {
          const command_result r = run_command(argv);
          if (r.status != 0)
            add(out, {"fsck_errors", last, op_name(kinds, last), "", "", "", last_line(r.output)});
        }
        reorder_now_ = 0;
        if (!o_.keep.empty() && out.first_state.empty() && found_so_far() > found_before) {
          out.first_state = fmt::format("{}/{}.img", o_.keep, file_name_of(out.name));
          FSRR_TRY(build(k, out.first_state));  // as the power cut left it, before recovery
        }
      }
    }
    for (auto& f : initial_first_)
      if (std::count_if(out.first.begin(), out.first.end(), [&](const crash_finding& x) {
            return x.kind == f.kind;
          }) < static_cast<long>(max_listed))
        out.first.push_back(std::move(f));
    out.check_ns = monotonic_ns() - start;
    return {};
  }

 private:
  // The state a power cut leaves at a point: the log's records up to its last flush before it.
  size_t cut_at(const crash_point& p) const {
    size_t cut = std::min<size_t>(p.logged, log_.size());
    while (cut > 0 && !log_[cut - 1].flush) --cut;
    return cut;
  }
  result<void> mkdir_in(const std::string& name) {
    if (::mkdir((dir_ + "/" + name).c_str(), 0700) != 0)
      return failure("mkdir {}/{}: {}", dir_, name, std::strerror(errno));
    return {};
  }
  result<void> mount(const std::string& device, const std::string& at) {
    std::vector<std::string> argv{"mount", "-o",
                                  "nosuid,nodev" + (layer_.mount_opts.empty()
                                                        ? std::string()
                                                        : "," + layer_.mount_opts)};
    argv.push_back(device);
    argv.push_back(at);
    const command_result r = run_command(argv);
    if (r.status != 0) return failure("mount {}: {}", at, last_line(r.output));
    mounted_.push_back(at);
    return {};
  }
  result<void> unmount(const std::string& at) {
    const command_result r = run_command({"umount", at});
    if (r.status != 0) return failure("umount {}: {}", at, last_line(r.output));
    std::erase(mounted_, at);
    return {};
  }
  uint64_t found_so_far() const { return findings_; }
  unsigned reorder_now_ = 0;  // the reordered subset being checked, 0: none
  root_layout layout_;

  // A file lost is counted once, at the first point it was found lost; the listing names
  // the workload's promises before the initial tree's.
  void add(crash_fs_result& out, crash_finding f, bool initial = false) {
    f.reorder = reorder_now_;
    if ((f.kind == "lost_durable" || f.kind == "rename_not_atomic") &&
        !lost_.insert(f.kind + f.path).second)
      return;
    ++out.counts[f.kind];
    ++findings_;
    auto& list = initial ? initial_first_ : out.first;
    if (std::count_if(list.begin(), list.end(), [&](const crash_finding& x) {
          return x.kind == f.kind;
        }) < static_cast<long>(max_listed))
      list.push_back(std::move(f));
  }

  void check_point(crash_fs_result& out, const std::vector<promised_file>& promised,
                   const std::string& target_dir, const data_source& data, uint64_t point,
                   const std::vector<op>& kinds) {
    verify_options vo;
    vo.times = false;
    vo.threads = 1;
    vo.content = &data;
    auto target = target_root::open(target_dir, {}, layout_);
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
        if (target && std::any_of(p.before.begin(), p.before.end(), [&](const expected_entry& b) {
              return compare({{p.path, b}}, *target, vo).empty();
            }))
          continue;
        add(out, {"rename_not_atomic", point, op_name(kinds, point), p.path,
                  fmt::format("{} #{}", op_name(kinds, p.by), p.by),
                  fmt::format("the old file or the new ({} bytes)", p.entry.size),
                  "neither the old file nor the new: " + found_new});
        continue;
      }
      if (look(p.path)) continue;
      const std::string found_first = found;
      if (std::any_of(p.old_paths.begin(), p.old_paths.end(),
                      [&](const std::string& other) { return look(other); }))
        continue;
      found = found_first;
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
  uint64_t findings_ = 0;
  std::vector<crash_finding> initial_first_;
};

}  // namespace

result<crash_points> parse_crash_points(std::string_view text) {
  crash_points p;
  p.text = std::string(text);
  const auto number = [](std::string_view s) -> std::optional<uint64_t> {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
  };
  if (text == "durable") return p;
  if (text.starts_with("every:")) {
    const auto n = number(text.substr(6));
    if (!n || *n == 0) return failure("--points {}: every:N takes a number of ops from 1", text);
    p.how = crash_points::rule::every;
    p.every = *n;
    return p;
  }
  if (text.starts_with("seq:")) {
    p.how = crash_points::rule::seqs;
    std::string_view rest = text.substr(4);
    while (true) {
      const size_t comma = rest.find(',');
      const auto n = number(rest.substr(0, comma));
      if (!n) return failure("--points {}: seq: takes op numbers, comma-separated", text);
      p.seqs.insert(*n);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    return p;
  }
  return failure("--points {}: durable, every:N or seq:A,B,...", text);
}

result<std::vector<crash_fs_result>> crashtest(const crash_options& options) {
  if (::geteuid() != 0) return failure("crashtest makes and mounts file systems: run it as root");
  if (options.specs.empty()) return failure("crashtest: give at least one --fs");
  for (const fs_spec& spec : options.specs)
    if (spec.existing() || spec.layers.size() != 1 || spec.layers[0].kind == "tmpfs")
      return failure("crashtest --fs {}: a file system on a block device fsrr makes (ext4, xfs, "
                     "btrfs, ...), not tmpfs, a stack or a directory",
                     spec.name);
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
  for (size_t k = 0; k < o.specs.size() && !(o.cancel && o.cancel->load()); ++k) {
    const fs_spec& spec = o.specs[k];
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

nlohmann::json crashtest_json(const crash_options& o, const std::vector<crash_fs_result>& all) {
  nlohmann::json j = {{"trace", o.trace},        {"system", machine_info()},
                      {"points", o.points.text}, {"reorder", o.reorder},
                      {"seed", o.seed},          {"fs", nlohmann::json::array()}};
  for (const auto& r : all) {
    nlohmann::json f = {{"name", r.name},
                        {"kind", r.kind},
                        {"mkfs", r.mkfs_options},
                        {"mount", r.mount_options},
                        {"crash_points", r.points},
                        {"states", r.states},
                        {"reordered_states", r.reordered},
                        {"log_writes", r.log_writes},
                        {"log_flushes", r.log_flushes},
                        {"check_ns", r.check_ns},
                        {"states_per_s", r.check_ns ? r.states * 1e9 / r.check_ns : 0.0},
                        {"replay_mismatches", r.replay_mismatches},
                        {"first_state", r.first_state},
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
                           {"found", x.found},
                           {"reorder", x.reorder}});
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
