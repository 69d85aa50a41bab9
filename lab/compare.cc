#include "compare.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "aged_image.h"
#include "clock.h"
#include "end_state.h"
#include "made_fs.h"
#include "placement.h"
#include "replay.h"
#include "schedule.h"
#include "verify.h"

namespace fsrr::lab {
namespace {

std::string line_of(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      const size_t colon = line.find(':');
      std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return "";
}

nlohmann::json system_info() {
  utsname u{};
  ::uname(&u);
  const std::string mem = line_of("/proc/meminfo", "MemTotal");  // "24684084 kB"
  return {{"kernel", fmt::format("{} {}", u.sysname, u.release)},
          {"cpu", line_of("/proc/cpuinfo", "model name")},
          {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)},
          {"memory_bytes", mem.empty() ? 0 : std::stoull(mem) * 1024},
          {"fsrr", "fsrr " FSRR_VERSION}};
}

nlohmann::json spread(std::vector<double> v) {
  if (v.empty()) return {{"median", 0}, {"min", 0}, {"max", 0}};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {{"median", median}, {"min", v.front()}, {"max", v.back()}};
}

double per_s(uint64_t n, uint64_t ns) {
  return ns ? static_cast<double>(n) * 1e9 / static_cast<double>(ns) : 0.0;
}

std::string duration(uint64_t ns) {
  const uint64_t s = ns / 1'000'000'000;
  return s >= 60 ? fmt::format("{}m{:02}s", s / 60, s % 60) : fmt::format("{}s", s);
}

std::string gib_or_mib(uint64_t bytes) {
  return bytes >= (1ull << 30) ? fmt::format("{:.1f} GiB", bytes / 1073741824.0)
                               : fmt::format("{} MiB", bytes >> 20);
}

result<void> make_dirs(const std::string& p) {
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  if (ec) return failure("mkdir -p {}: {}", p, ec.message());
  return {};
}

// An error unless `path` resolves to a directory beneath `top` (plain names from the
// placement, and directories compare made: a check that nothing else led it elsewhere).
result<void> inside(const std::string& top, const std::string& path) {
  std::error_code e1, e2;
  const auto t = std::filesystem::canonical(top, e1), p = std::filesystem::canonical(path, e2);
  const auto rel = p.lexically_relative(t);
  if (e1 || e2 || rel.empty() || *rel.begin() == "..")
    return failure("{} is not beneath {}: refusing to replay there", path, top);
  return {};
}

void drop_caches() {
  ::sync();
  if (std::ofstream f("/proc/sys/vm/drop_caches"); f) f << "3\n";
}

// One run on one file system: everything measured, then nothing left of it.
struct run_result {
  nlohmann::json report;  // the (last) replay's report
  uint64_t wall_ns = 0, bytes = 0, files = 0, ops = 0;
  uint64_t space = 0, logical = 0, mismatches = 0, differences = 0;
  bool verified = true;
  std::string device, mkfs, mount, tool;
  nlohmann::json copies = nlohmann::json::array();
  compare_cost cost;
  std::optional<layout_stats> layout;  // of what the run left (block file systems)
  free_space free;                     // after the run, from the unmounted image
};

// Time `f` takes, added to `into`.
template <typename F>
auto timed(uint64_t& into, F&& f) {
  const uint64_t start = monotonic_ns();
  struct add {
    uint64_t& into;
    uint64_t start;
    ~add() { into += monotonic_ns() - start; }
  } on_exit{into, start};
  return f();
}

class comparison {
 public:
  // The trace read, its placement decided and its end state worked out: what every run needs.
  static result<std::unique_ptr<comparison>> open(const compare_options& o) {
    result<trace_reader> trace = trace_reader::open(o.trace);
    if (!trace) return failure(trace.error());
    std::unique_ptr<comparison> c(new comparison(o, std::move(*trace)));
    if (o.data.kind == data_kind::compressible) c->ratios_ = c->data_.measure();
    const auto& sum = c->trace_.summary();
    if (!o.all_on_test) {
      result<placement> where = decide_placement(c->trace_);
      if (!where) return failure(where.error());
      c->where_ = std::move(*where);
    }
    // images hold the tree and what the workload writes, twice over, per copy
    const uint64_t data = sum.tree.bytes + sum.bytes_written;
    c->test_bytes_ = (2 * data + (256ull << 20)) * std::max(1u, o.repeat);
    c->source_bytes_ = (2 * sum.tree.bytes + (64ull << 20)) * std::max(1u, o.repeat);
    if (sum.events > 0) {
      result<expected_state> end = expected_end_state(c->trace_);
      if (!end) return failure(end.error());
      c->expected_ = std::move(*end);
    } else {
      c->expected_ = expected_from_tree(c->trace_);
    }
    c->logical_ = c->logical_on_test();
    return c;
  }

  // One run on `spec`, made by mkfs or, given `aged`, a copy of that image.
  result<run_result> run(const fs_spec& spec, const std::string& images,
                         const std::string& aged = "") {
    run_result r;
    compare_cost& cost = r.cost;
    result<std::unique_ptr<made_fs>> made = made_fs::make(spec, images, test_bytes_, aged);
    if (!made) return failure(made.error());
    made_fs& test = **made;
    cost.make_ns += test.make_ns();
    r.device = test.device();
    r.mkfs = test.mkfs();
    r.mount = test.mount_options();
    r.tool = test.tool();
    result<made_fs*> made_source = source_fs(images, cost);
    if (!made_source) return failure(made_source.error());
    made_fs* source = *made_source;
    const bool reuse = source_ready_;  // the source as an earlier run prepared and verified it
    const uint64_t before = test.used_bytes();
    for (unsigned copy = 1; copy <= std::max(1u, o_.repeat); ++copy) {
      FSRR_TRY(check_cancel());
      const std::string sub = o_.repeat > 1 ? fmt::format("/copy{:02}", copy) : "";
      replay_options ro;
      ro.target = test.path() + replay_dir() + sub;
      FSRR_TRY(make_dirs(ro.target));
      for (const std::string& from : where_.on_source) {
        const std::string to = source->path() + sub + from;
        FSRR_TRY(make_dirs(to));
        FSRR_TRY(inside(source->path(), to));
        ro.maps.push_back({from, to});
      }
      replay_setup setup;
      if (reuse) setup.in_place = where_.on_source;
      setup.source = &data_;
      setup.ratios = ratios_;
      ro.data = o_.data;
      ro.timing = o_.timing;
      ro.issue_all = o_.issue_all;
      ro.realtime = o_.realtime;
      // Owners as recorded when root: a chown to another owner is the work a file system is
      // measured doing. Set-id bits and privileged xattrs stay out (privilege.h).
      ro.privilege.owners = ::geteuid() == 0;
      ro.cancel = o_.cancel;
      auto job = replay_job::open(trace_, ro, std::move(setup));
      if (!job) return failure(job.error());
      FSRR_TRY(job->prepare());
      if (o_.drop_caches) timed(cost.drop_ns, drop_caches);
      const replay_outcome out = job->run();
      FSRR_TRY(check_cancel());
      const replay_stats& s = out.report.replay;
      cost.prepare_ns += out.report.prepare.wall_ns;
      cost.replay_ns += s.wall_ns;
      cost.sync_ns += test.sync_ns();
      r.wall_ns += s.wall_ns;
      r.bytes += std::max(s.bytes_read, s.bytes_written);
      r.files += s.files;
      for (const op_stats& st : s.ops) r.ops += st.count;
      r.mismatches += s.mismatches;
      r.differences += s.differences;
      if (out.status != 0) r.verified = false;  // prepare errors, an early stop
      FSRR_TRY(timed(cost.verify_ns, [&]() -> result<void> {
        const result<target_root> placed =
            target_root::open(ro.target, ro.maps, root_layout_of(trace_));
        if (!placed) return failure(placed.error());
        if (!compare(expected_, *placed, {::geteuid() == 0, true}).empty()) r.verified = false;
        return {};
      }));
      const uint64_t used = test.used_bytes() - std::min(before, test.used_bytes());
      r.copies.push_back({{"copy", copy}, {"wall_ns", s.wall_ns}, {"space_used_bytes", used}});
      r.space = used;
      r.report = nlohmann::json::parse(report_json(out.report));
    }
    r.logical = logical_ * std::max(1u, o_.repeat);
    if (!spec.existing() && spec.layers.size() == 1 && spec.layers.front().kind != "tmpfs") {
      // how what the run left lies on disk, and the free space around it
      FSRR_TRY(timed(cost.layout_ns, [&]() -> result<void> {
        result<layout_stats> layout = layout_of(test.path() + replay_dir());
        if (!layout) return failure(layout.error());
        r.layout = *layout;
        result<std::string> image = test.unmount();
        if (!image) return failure(image.error());
        r.free = free_space_of(spec.layers.front().kind, *image);
        return {};
      }));
    }
    if (r.verified)
      source_ready_ = source != nullptr;
    else
      drop_source(cost);  // the next run makes it afresh
    cost.unmake_ns += test.unmake();
    return r;
  }

  // The source file system is fixed, as the disk a hand-made comparison copies from: made and
  // prepared by the first run, only read by the replays (placement), verified by each run, and
  // made again only after a run that did not verify.
  result<made_fs*> source_fs(const std::string& images, compare_cost& cost) {
    if (where_.on_source.empty()) return nullptr;
    if (!source_) {
      result<std::unique_ptr<made_fs>> made = made_fs::make(o_.source_fs, images, source_bytes_);
      if (!made) return failure(made.error());
      source_ = std::move(*made);
      cost.make_ns += source_->make_ns();
      source_ready_ = false;
    }
    return source_.get();
  }
  void drop_source(compare_cost& cost) {
    if (source_) cost.unmake_ns += source_->unmake();
    source_.reset();
    source_ready_ = false;
  }

  // The bytes of the regular files a run leaves on the file system under test, a hard-linked
  // inode once: what du --apparent-size would count there, known from the end state (which
  // verify checks every run).
  uint64_t logical_on_test() const {
    const auto on_source = [&](const std::string& p) {
      for (const std::string& prefix : where_.on_source)
        if (p.starts_with(prefix) && (p.size() == prefix.size() || p[prefix.size()] == '/'))
          return true;
      return false;
    };
    uint64_t bytes = 0;
    std::set<uint32_t> groups;
    for (const auto& [path, x] : expected_)
      if (!x.absent && S_ISREG(x.mode) && !on_source(path) &&
          (x.link_group == 0 || groups.insert(x.link_group).second))
        bytes += x.size;
    return bytes;
  }

  // Refuses, before anything is made, a compare whose images cannot fit where they would go:
  // one run's images at a time (sparse: what the replay writes, and metadata).
  result<void> check_room(const std::string& images, uint64_t aged_bytes) {
    bool on_disk = false;
    for (const fs_spec& f : o_.fs)
      on_disk = on_disk || (!f.existing() && f.layers.back().kind != "tmpfs");
    if (!on_disk) return {};
    const auto& sum = trace_.summary();
    const uint64_t need = (sum.tree.bytes + sum.bytes_written) * std::max(1u, o_.repeat) +
                          (256ull << 20) + aged_bytes;
    struct statvfs st;
    if (::statvfs(images.c_str(), &st) != 0) return {};
    const uint64_t free = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    if (free < need)
      return failure(
          "{} has {:.1f} GiB free; the images of this compare need about {:.1f} GiB (--images "
          "DIR puts them elsewhere)",
          images, free / 1073741824.0, need / 1073741824.0);
    return {};
  }

  // Where the replays go on the file system under test: its root, or beside the aging's
  // .fsrr-aged when any row is aged (fresh rows too, so that all replay alike) — a workload
  // that lists its root must not find the aging there.
  std::string replay_dir() const {
    for (const age_profile& p : o_.ages)
      if (p.aged()) return "/replay";
    return "";
  }

  // The size of the image a run on `l` gets: what its spec names, or what this trace needs.
  uint64_t image_bytes(const fs_layer& l) const {
    return l.size ? l.size : std::max(test_bytes_, min_image_bytes(l.kind));
  }
  // The room a run needs on the file system under test, at least.
  uint64_t needs_on_test() const { return test_bytes_ / 2; }

  const placement& where() const { return where_; }
  trace_reader& trace() { return trace_; }

  result<void> check_cancel() const {
    if (o_.cancel && o_.cancel->load())
      return failure("compare interrupted; nothing is left mounted");
    return {};
  }

 private:
  comparison(const compare_options& o, trace_reader trace)
      : o_(o), trace_(std::move(trace)), data_(o.data) {}

  const compare_options& o_;
  trace_reader trace_;
  placement where_;
  const data_source data_;  // built and measured once for every run
  std::optional<data_source::ratios> ratios_;
  expected_state expected_;
  uint64_t test_bytes_ = 0, source_bytes_ = 0, logical_ = 0;
  std::unique_ptr<made_fs> source_;
  bool source_ready_ = false;
};

// One row of compare.json from the runs on one file system.
nlohmann::json row_of(const fs_spec& spec, const std::vector<run_result>& runs) {
  std::vector<double> mib, files, ops, wall, sync;
  for (const run_result& r : runs) {
    mib.push_back(per_s(r.bytes, r.wall_ns) / 1048576.0);
    files.push_back(per_s(r.files, r.wall_ns));
    ops.push_back(per_s(r.ops, r.wall_ns));
    wall.push_back(static_cast<double>(r.wall_ns));
    sync.push_back(static_cast<double>(r.cost.sync_ns));
  }
  // the run of median wall time stands for the others in what is not a spread
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return runs[a].wall_ns < runs[b].wall_ns; });
  const run_result& typical = runs[order[order.size() / 2]];
  nlohmann::json ops_lat = nlohmann::json::object();
  for (const auto& [name, o] : typical.report["ops"].items())
    ops_lat[name] = {{"count", o["count"]}, {"latency_ns", o["latency_ns"]}};
  uint64_t mismatches = 0;
  bool verified = true;
  nlohmann::json differences = nlohmann::json::object(), all_runs = nlohmann::json::array();
  for (const run_result& r : runs) {
    mismatches += r.mismatches;
    verified = verified && r.verified;
    for (const auto& [op, n] : r.report["differences"].items())
      differences[op] = differences.value(op, 0) + n.get<uint64_t>();
    all_runs.push_back(r.report);
  }
  nlohmann::json row = {{"name", spec.name},
                        {"spec", spec.name},
                        {"kind", spec.existing() ? "directory" : spec.layers.front().kind},
                        {"device", typical.device},
                        {"mkfs", typical.mkfs},
                        {"mount", typical.mount},
                        {"tool", typical.tool},
                        {"mib_per_s", spread(mib)},
                        {"files_per_s", spread(files)},
                        {"ops_per_s", spread(ops)},
                        {"wall_ns", spread(wall)},
                        {"sync_ns", spread(sync)},
                        {"space_used_bytes", typical.space},
                        {"logical_bytes", typical.logical},
                        {"ops", ops_lat},
                        {"mismatches", mismatches},
                        {"differences", differences},
                        {"verify", verified},
                        {"timeline", typical.report.value("timeline", nlohmann::json::array())},
                        {"copies", typical.copies},
                        {"runs", all_runs}};
  if (typical.layout) {
    const layout_stats& l = *typical.layout;
    row["layout"] = {{"score", l.score()},
                     {"extents_per_file", l.extents_per_file()},
                     {"extents_per_mib", l.extents_per_mib()},
                     {"files", l.files},
                     {"bytes", l.bytes}};
    row["free_space_fragments"] =
        typical.free.fragments < 0 ? nlohmann::json() : nlohmann::json(typical.free.fragments);
  }
  // Timed: how late the typical run issued its ops, and the part its ops' own latencies on
  // this file system forced (a file system slower than the recording's falls behind its pace).
  for (const char* key : {"lateness_ns", "op_bound_lateness_ns"})
    if (typical.report.contains(key)) row[key] = typical.report[key];
  return row;
}

// Each row's change against an earlier compare; true if one got slower beyond its spread.
result<bool> against_baseline(nlohmann::json& current, const std::string& path) {
  std::ifstream in(path);
  if (!in) return failure("--baseline {}: {}", path, std::strerror(errno));
  bool slower = false;
  try {  // any file may be named: each key looked up with value(), a wrong type is an error
    const nlohmann::json old = nlohmann::json::parse(in);
    for (auto& row : current["fs"]) {
      for (const auto& was : old.value("fs", nlohmann::json::array())) {
        if (was.value("name", "") != row["name"]) continue;
        const nlohmann::json was_mib = was.value("mib_per_s", nlohmann::json::object());
        const double old_median = was_mib.value("median", 0.0);
        const double old_min = was_mib.value("min", 0.0);
        const double now = row["mib_per_s"]["median"];
        const bool worse = now < old_min;  // below all the earlier runs
        row["baseline"] = {{"mib_per_s", old_median},
                           {"mib_per_s_change", old_median ? now / old_median - 1 : 0.0},
                           {"slower", worse}};
        slower = slower || worse;
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return failure("--baseline {}: not a compare.json ({})", path, e.what());
  }
  return slower;
}

}  // namespace

nlohmann::json machine_info() { return system_info(); }

compare_cost& compare_cost::operator+=(const compare_cost& o) {
  make_ns += o.make_ns;
  prepare_ns += o.prepare_ns;
  drop_ns += o.drop_ns;
  replay_ns += o.replay_ns;
  sync_ns += o.sync_ns;
  verify_ns += o.verify_ns;
  unmake_ns += o.unmake_ns;
  age_ns += o.age_ns;
  layout_ns += o.layout_ns;
  return *this;
}

result<compare_outcome> run_compare(const compare_options& o) {
  if (::geteuid() != 0) return failure("compare makes and mounts file systems: run it as root");
  if (o.fs.empty()) return failure("compare: give at least one --fs");
  const bool realtime = o.realtime && o.timing != "afap";  // as replay: timed modes only
  if (realtime) FSRR_TRY(realtime_allowed());  // before any image is made
  const uint64_t start = monotonic_ns();
  std::string images = o.images;
  bool own_images = false;
  if (images.empty()) {
    char tmpl[] = "/var/tmp/fsrr-compare.XXXXXX";
    if (!::mkdtemp(tmpl)) return failure("mkdtemp: {}", std::strerror(errno));
    images = tmpl;
    own_images = true;
  } else if (::mkdir(images.c_str(), 0700) == 0) {
    own_images = true;  // made here, so removed here once empty
  } else if (errno != EEXIST) {
    return failure("--images {}: {}", images, std::strerror(errno));
  } else if (struct stat st; ::stat(images.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return failure("--images {}: not a directory", images);
  }
  struct remove_dir {  // the scratch directory, once every image in it is gone
    std::string path;
    bool own;
    ~remove_dir() {
      if (own) ::rmdir(path.c_str());
    }
  } scratch{images, own_images};

  result<std::unique_ptr<comparison>> opened = comparison::open(o);
  if (!opened) return failure(opened.error());
  comparison& c = **opened;
  // the rows: each file system fresh, or aged by each profile
  const std::vector<age_profile> ages = o.ages.empty() ? std::vector<age_profile>{age_profile{}} : o.ages;
  bool aging = false;
  const bool cache_off = o.age_cache == "off";
  // room the aged images take in the images directory: the largest copy (a run's), and with
  // the cache off every aged image too
  uint64_t aged_bytes = 0, largest = 0;
  for (size_t a = 0; a < ages.size(); ++a)
    for (size_t b = 0; b < a; ++b)
      if (ages[a].text == ages[b].text) return failure("--age {} is given twice", ages[a].text);
  for (const age_profile& p : ages) {
    if (!p.aged()) continue;
    aging = true;
    for (const fs_spec& f : o.fs) {
      if (f.existing() || f.layers.size() != 1 || f.layers[0].kind == "tmpfs")
        return failure("--fs {}: --age ages an image of one block file system (ext4, xfs, "
                       "btrfs...); compare it with --age none alone",
                       f.name);
      const uint64_t size = c.image_bytes(f.layers[0]);
      // sparse, trimmed: what aging left; replay=: how full it gets is the replays' to say
      const uint64_t image = p.fill > 0 ? static_cast<uint64_t>(size * p.fill) : size;
      largest = std::max(largest, image);
      if (cache_off) aged_bytes += image;
      if (p.fill <= 0) continue;
      const uint64_t left = static_cast<uint64_t>(size * (1 - p.fill));
      if (left < c.needs_on_test())
        return failure(
            "--fs {} aged to {:.0f}% of its {} leaves {}, and this workload needs about {} "
            "there: give it a size (e.g. {}:size={}G)",
            f.name, p.fill * 100, gib_or_mib(size), gib_or_mib(left),
            gib_or_mib(c.needs_on_test()), f.layers[0].kind,
            static_cast<uint64_t>(c.needs_on_test() / (1 - p.fill) / 1073741824.0) + 1);
    }
  }
  aged_bytes += largest;
  FSRR_TRY(c.check_room(images, aged_bytes));
  compare_outcome out;
  // aged images: made once per file system and profile (or found in the cache), copied per run
  const std::string cache =
      cache_off ? images : !o.age_cache.empty() ? o.age_cache
                         : !o.images.empty()    ? images + "/aged"
                                                : "/var/cache/fsrr/aged";
  struct made_here {  // aged images of --age-cache off: gone with the compare
    std::vector<std::string> paths;
    ~made_here() {
      for (const auto& p : paths) ::unlink(p.c_str());
    }
  } uncached;
  std::map<std::pair<size_t, size_t>, aged_image> aged;
  for (size_t a = 0; a < ages.size(); ++a) {
    if (!ages[a].aged()) continue;
    for (size_t i = 0; i < o.fs.size(); ++i) {
      FSRR_TRY(c.check_cancel());
      const fs_layer& l = o.fs[i].layers[0];
      const uint64_t size = c.image_bytes(l);
      const uint64_t t0 = monotonic_ns();
      if (o.say) o.say(fmt::format("age {} {}: ...", o.fs[i].name, ages[a].text));
      const std::function<void(const std::string&)> progress;  // a line per 256 files: too many
      result<aged_image> img =
          cache_off ? make_aged_image(l, size, ages[a], fmt::format("{}/aged-{}-{}.img", images, i, a),
                                      o.cancel, progress)
                    : cached_aged_image(l, size, ages[a], cache, o.cancel, progress);
      if (!img) return failure(img.error(), fmt::format("--age {} on {}: ", ages[a].text, o.fs[i].name));
      if (cache_off) uncached.paths.push_back(img->path);
      if (!img->cached) out.cost.age_ns += monotonic_ns() - t0;
      if (o.say)
        o.say(fmt::format(
            "age {} {}: {} files, {:.1f}% full, free space in {} pieces; {}", o.fs[i].name,
            ages[a].text, img->aged.files, img->aged.fill * 100,
            img->free.fragments < 0 ? std::string("?") : std::to_string(img->free.fragments),
            img->cached ? fmt::format("from the cache, {}", img->path)
            : cache_off ? fmt::format("made in {:.1f} s", (monotonic_ns() - t0) / 1e9)
                        : fmt::format("made in {:.1f} s, kept as {}", (monotonic_ns() - t0) / 1e9,
                                      img->path)));
      aged.emplace(std::pair{i, a}, std::move(*img));
    }
  }
  struct row_key {
    size_t fs, age;
  };
  std::vector<row_key> keys;
  for (size_t i = 0; i < o.fs.size(); ++i)
    for (size_t a = 0; a < ages.size(); ++a) keys.push_back({i, a});
  const auto row_name = [&](const row_key& k) {
    if (!aging && ages.size() == 1) return o.fs[k.fs].name;
    return fmt::format("{} ({})", o.fs[k.fs].name,
                       !ages[k.age].aged() ? "fresh" : ages[k.age].text);
  };
  std::map<size_t, std::vector<run_result>> by_row;
  const size_t total = keys.size() * std::max(1u, o.runs);
  size_t done = 0;
  const uint64_t runs_start = monotonic_ns();  // the eta counts runs, not aging
  for (unsigned round = 0; round < std::max(1u, o.runs); ++round) {
    for (size_t k = 0; k < keys.size(); ++k) {
      FSRR_TRY(c.check_cancel());
      const uint64_t elapsed = monotonic_ns() - runs_start;
      const std::string eta =
          done ? fmt::format(", eta {}", duration(elapsed / done * (total - done))) : "";
      if (o.say)
        o.say(fmt::format("[{}/{}] {} (round {} of {}){}", done + 1, total, row_name(keys[k]),
                          round + 1, std::max(1u, o.runs), eta));
      const auto from = aged.find({keys[k].fs, keys[k].age});
      result<run_result> ran =
          c.run(o.fs[keys[k].fs], images, from == aged.end() ? "" : from->second.path);
      if (!ran) return failure(ran.error());
      run_result& r = *ran;
      if (o.say)
        o.say(
            fmt::format("  {:.1f} MiB/s, {:.0f} files/s, replay {:.3f} s, sync {:.3f} s, {} "
                        "mismatches, {} differences, {}{}",
                        per_s(r.bytes, r.wall_ns) / 1048576.0, per_s(r.files, r.wall_ns),
                        r.wall_ns / 1e9, r.cost.sync_ns / 1e9, r.mismatches, r.differences,
                        r.verified ? "verified" : "NOT VERIFIED",
                        r.layout ? fmt::format(", layout score {:.3f}", r.layout->score()) : ""));
      if (!r.verified || r.mismatches) out.status = 1;
      out.cost += r.cost;
      by_row[k].push_back(std::move(r));
      ++done;
    }
  }
  c.drop_source(out.cost);
  // what each row measured: the prefixes on the file system under test ("/": everything)
  const auto& on_test =
      c.where().on_source.empty() ? std::vector<std::string>{"/"} : c.where().on_test;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t k = 0; k < keys.size(); ++k) {
    rows.push_back(row_of(o.fs[keys[k].fs], by_row[k]));
    nlohmann::json& row = rows.back();
    row["name"] = row_name(keys[k]);
    row["placement"] = on_test;
    row["age"] = !ages[keys[k].age].aged() ? "none" : ages[keys[k].age].text;
    if (const auto from = aged.find({keys[k].fs, keys[k].age}); from != aged.end()) {
      row["aged"] = from->second.json();
      row["aged"].erase("age");
    }
  }
  const auto& h = c.trace().header();
  out.result = {{"trace", o.trace},
                {"command", h.command},
                {"runs", std::max(1u, o.runs)},
                {"timing", o.timing},
                {"realtime", realtime},
                {"data", o.data.describe()},
                {"repeat", std::max(1u, o.repeat)},
                {"placement",
                 {{"on_source", c.where().on_source},
                  {"on_test", on_test},
                  {"source_fs", c.where().on_source.empty() ? "" : o.source_fs.name}}},
                {"system", system_info()},
                {"age", [&] {
                   std::vector<std::string> texts;
                   for (const age_profile& p : ages) texts.push_back(p.aged() ? p.text : "none");
                   return texts;
                 }()},
                {"age_cache", !aging ? "" : cache_off ? "off" : cache},
                {"fs", rows}};
  if (!o.baseline.empty()) {
    const result<bool> slower = against_baseline(out.result, o.baseline);
    if (!slower) return failure(slower.error());
    if (*slower && out.status == 0) out.status = 3;
  }
  out.wall_ns = monotonic_ns() - start;
  const compare_cost& k = out.cost;
  out.result["wall_ns"] = out.wall_ns;
  // where the time went; "compare" is what the runs' steps leave: compare's own cost
  out.result["cost_ns"] = {
      {"mkfs_mount", k.make_ns},  {"prepare", k.prepare_ns},
      {"drop_caches", k.drop_ns}, {"replay", k.replay_ns},
      {"sync", k.sync_ns},        {"verify", k.verify_ns},
      {"unmount", k.unmake_ns},   {"age", k.age_ns},
      {"layout", k.layout_ns},    {"compare", out.wall_ns - std::min(out.wall_ns, k.work_ns())}};
  return out;
}

std::string compare_table(const nlohmann::json& result) {
  // the syncs of a trace that has them get their latency (seed 004's question)
  std::vector<std::string> syncs;
  for (const char* op : {"fsync", "fdatasync"})
    for (const auto& r : result["fs"])
      if (r.contains("ops") && r["ops"].contains(op)) {
        syncs.push_back(op);
        break;
      }
  size_t name_width = 24;
  bool layout = false;  // the layout of what the replay left (block file systems)
  for (const auto& r : result["fs"]) {
    name_width = std::max(name_width, r["name"].get<std::string>().size() + 2);
    layout = layout || r.contains("layout");
  }
  std::string t = fmt::format("{:<{}}{:>10}{:>18}{:>11}{:>10}{:>10}{:>12}{:>8}{:>7}",
                              "file system", name_width, "MiB/s", "(min-max)", "files/s", "wall s",
                              "sync s", "space MiB", "mism.", "diff.");
  for (const auto& op : syncs) t += fmt::format("{:>18}{:>9}", op + " p50 us", "p99 us");
  // a timed compare: how late each file system replayed, and how much of it its ops forced
  bool timed = false;
  for (const auto& r : result["fs"]) timed = timed || r.contains("lateness_ns");
  if (timed) t += fmt::format("{:>14}{:>11}", "late p99 ms", "ops alone");
  if (layout) t += fmt::format("{:>8}{:>11}", "layout", "free pcs");
  t += "  verify\n";
  for (const auto& r : result["fs"]) {
    uint64_t diffs = 0;
    for (const auto& [op, n] : r["differences"].items()) diffs += n.get<uint64_t>();
    t += fmt::format(
        "{:<{}}{:>10.1f}{:>18}{:>11.0f}{:>10.3f}{:>10.3f}{:>12.1f}{:>8}{:>7}",
        r["name"].get<std::string>(), name_width, r["mib_per_s"]["median"].get<double>(),
        fmt::format("({:.1f}-{:.1f})", r["mib_per_s"]["min"].get<double>(),
                    r["mib_per_s"]["max"].get<double>()),
        r["files_per_s"]["median"].get<double>(), r["wall_ns"]["median"].get<double>() / 1e9,
        r["sync_ns"]["median"].get<double>() / 1e9,
        r["space_used_bytes"].get<uint64_t>() / 1048576.0, r["mismatches"].get<uint64_t>(), diffs);
    for (const auto& op : syncs) {
      if (!r["ops"].contains(op)) {
        t += fmt::format("{:>18}{:>9}", "-", "-");
        continue;
      }
      const auto& l = r["ops"][op]["latency_ns"];
      t += fmt::format("{:>18.1f}{:>9.1f}", l.value("p50", 0.0) / 1e3, l.value("p99", 0.0) / 1e3);
    }
    if (timed && r.contains("lateness_ns") && r.contains("op_bound_lateness_ns"))
      t += fmt::format("{:>14.2f}{:>11.2f}", r["lateness_ns"].value("p99", 0.0) / 1e6,
                       r["op_bound_lateness_ns"].value("p99", 0.0) / 1e6);
    else if (timed)
      t += fmt::format("{:>14}{:>11}", "-", "-");
    if (layout && r.contains("layout")) {
      const auto& frag = r.value("free_space_fragments", nlohmann::json());
      t += fmt::format("{:>8.3f}{:>11}", r["layout"].value("score", 0.0),
                       frag.is_number() ? std::to_string(frag.get<int64_t>()) : "-");
    } else if (layout) {
      t += fmt::format("{:>8}{:>11}", "-", "-");
    }
    t += fmt::format("  {}", r["verify"] ? "yes" : "NO");
    if (r.contains("baseline"))
      t += fmt::format("  {:+.1f}% vs baseline{}",
                       r["baseline"]["mib_per_s_change"].get<double>() * 100,
                       r["baseline"]["slower"] ? " (SLOWER)" : "");
    t += "\n";
  }
  return t;
}

}  // namespace fsrr::lab
