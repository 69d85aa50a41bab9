#include "aging.h"

#include <fcntl.h>
#include <ftw.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "clock.h"
#include "command.h"
#include "replay.h"
#include "trace_reader.h"

namespace fsrr::lab {
namespace {

std::optional<uint64_t> number(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

struct fs_usage {
  uint64_t capacity = 0, used = 0;
};
fs_usage usage(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return {};
  return {uint64_t{v.f_blocks} * v.f_frsize, uint64_t{v.f_blocks - v.f_bfree} * v.f_frsize};
}

void sync_fs(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::syncfs(fd);
  ::close(fd);
}

constexpr uint64_t files_per_dir = 1000;
constexpr uint64_t check_every_files = 256;

class ager {
 public:
  ager(const std::string& dir, const age_profile& p, size_distribution sizes,
       const std::atomic<bool>* cancel, const std::function<void(const std::string&)>& progress)
      : dir_(dir), root_(dir + "/.fsrr-aged"), p_(p), sizes_(std::move(sizes)), rng_(p.seed),
        cancel_(cancel), progress_(progress) {
    data_.resize(1 << 20);
    std::mt19937_64 bytes(p.seed ^ 0x5eed);
    for (size_t i = 0; i < data_.size(); i += 8) {
      const uint64_t v = bytes();
      std::memcpy(data_.data() + i, &v, 8);
    }
  }

  result<age_result> run() {
    const uint64_t t0 = monotonic_ns();
    if (::mkdir(root_.c_str(), 0755) != 0 && errno != EEXIST)
      return failure("mkdir {}: {}", root_, std::strerror(errno));
    const fs_usage u = usage(dir_);
    if (!u.capacity) return failure("{}: statvfs: {}", dir_, std::strerror(errno));
    target_ = static_cast<uint64_t>(p_.fill * static_cast<double>(u.capacity));
    // read the accounting each 0.4% of the capacity (or 256 MiB) written: within 2% of it
    check_every_bytes_ = std::min<uint64_t>(256ull << 20, u.capacity / 256);
    // Each churn round nearly fills it, then prunes it back: holes where the pruned files
    // were. Its top leaves room for the largest file past the last check (and an append), so
    // that no round meets ENOSPC, whose moment is not the seed's to decide.
    const double cap = static_cast<double>(u.capacity);
    const double margin = static_cast<double>(sizes_.largest() + (64 << 10) + check_every_bytes_);
    const double high = std::min({0.95, p_.fill + 0.9 * (1 - p_.fill), 0.97 - margin / cap});
    if (p_.churn > 0 && high < p_.fill + 0.02)
      return failure("churn={}: the {} sizes (up to {:.0f} MiB) leave no room above fill={:.0f} "
                     "on {:.1f} GiB to churn in: a lower fill, smaller sizes or a larger image",
                     p_.churn, p_.sizes, sizes_.largest() / 1048576.0, p_.fill * 100,
                     cap / 1073741824.0);
    FSRR_TRY(fill("fill", target_));
    for (unsigned round = 1; round <= p_.churn && !r_.full_early; ++round) {
      appending_ = true;
      FSRR_TRY(fill(fmt::format("churn {}/{}", round, p_.churn),
                    static_cast<uint64_t>(high * cap), false));
      FSRR_TRY(prune(round));
      // freed space xfs counted late (its inodes are inactivated in the background) can leave
      // the prune below PCT: topped up again
      FSRR_TRY(fill(fmt::format("churn {}/{}", round, p_.churn), target_));
    }
    sync_fs(dir_);
    age_result r = r_;
    for (const auto& f : files_) r.bytes += f.size;
    r.files = files_.size();
    const fs_usage end = usage(dir_);
    r.fill = end.capacity ? double(end.used) / double(end.capacity) : 0;
    r.wall_ns = monotonic_ns() - t0;
    return r;
  }

 private:
  struct file {
    uint64_t id = 0, size = 0;
  };
  std::string path_of(uint64_t id) const {
    return fmt::format("{}/d{:05}/f{:07}", root_, id / files_per_dir, id);
  }
  bool cancelled() const { return cancel_ && cancel_->load(); }

  // Writes `size` bytes at the end of `path` (made with O_TRUNC when `fresh`); false on ENOSPC.
  result<bool> write(const std::string& path, uint64_t size, bool fresh, uint64_t salt) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (fresh ? O_TRUNC : O_APPEND), 0644);
    if (fd < 0) {
      if (errno == ENOSPC) return false;
      return failure("{}: {}", path, std::strerror(errno));
    }
    uint64_t at = (salt * 7919) % data_.size();
    for (uint64_t left = size; left > 0;) {
      const size_t n = std::min<uint64_t>(left, data_.size() - at);
      const ssize_t w = ::write(fd, data_.data() + at, n);
      if (w <= 0) {
        const int err = w < 0 ? errno : ENOSPC;
        ::close(fd);
        if (err == ENOSPC) return false;
        return failure("{}: {}", path, std::strerror(err));
      }
      left -= static_cast<uint64_t>(w);
      at = (at + static_cast<uint64_t>(w)) % data_.size();
    }
    // An append leaves xfs's speculative preallocation past the end in place (it trims it at
    // a file's first close only), counted as used until a background scan frees it, at a
    // moment no seed decides: freed here, so that the accounting the fill reads is the files'.
    if (!fresh)
      if (struct stat st; ::fstat(fd, &st) == 0)
        ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (st.st_size + 4095) / 4096 * 4096,
                    off_t{1} << 40);
    ::close(fd);
    return true;
  }

  // New files until the file system is `target` full: its accounting is read every
  // check_every_files files or check_every_bytes_ bytes, after a syncfs (btrfs counts late).
  // Full before it (no room, no inode): `final` says that is the fill, else just the top.
  result<void> fill(const std::string& phase, uint64_t target, bool final = true) {
    uint64_t since_files = 0, since_bytes = 0;
    if (usage(dir_).used >= target) return {};
    while (true) {
      if (cancelled()) return failure("interrupted");
      const uint64_t id = next_id_++;
      if (id % files_per_dir == 0) {
        const std::string d = fmt::format("{}/d{:05}", root_, id / files_per_dir);
        if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) {
          if (errno == ENOSPC || errno == EDQUOT) {  // no room or no inode left: the fill
            r_.full_early = r_.full_early || final;
            return {};
          }
          return failure("mkdir {}: {}", d, std::strerror(errno));
        }
      }
      const uint64_t size = sizes_.draw(rng_());
      auto wrote = write(path_of(id), size, true, id);
      if (!wrote) return tl::unexpected(wrote.error());
      if (!*wrote) {  // full before the target: what fits is the fill
        ::unlink(path_of(id).c_str());
        r_.full_early = r_.full_early || final;
        return {};
      }
      files_.push_back({id, size});
      ++r_.written;
      // appends to survivors in between, during churn
      if (appending_ && !files_.empty() && rng_() % 16 == 0) {
        file& f = files_[rng_() % files_.size()];
        const uint64_t more = 4096 + rng_() % (60 * 1024);
        auto appended = write(path_of(f.id), more, false, f.id + f.size);
        if (!appended) return tl::unexpected(appended.error());
        if (*appended) f.size += more, ++r_.appends;
      }
      since_bytes += size;
      if (++since_files >= check_every_files || since_bytes >= check_every_bytes_) {
        since_files = since_bytes = 0;
        sync_fs(dir_);
        const fs_usage u = usage(dir_);
        if (progress_)
          progress_(fmt::format("age: {}: {} files, {:.1f}% full of {:.1f}%", phase,
                                files_.size(), 100.0 * u.used / u.capacity,
                                100.0 * target / u.capacity));
        if (u.used >= target) return {};
      }
    }
  }

  // Seeded random files deleted until the file system is `target_` full again (its accounting
  // read as fill reads it).
  result<void> prune(unsigned round) {
    std::vector<size_t> order(files_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    // an rng of its own per round: where the round before stopped does not move its choice
    std::mt19937_64 choose(p_.seed ^ (0x9e3779b97f4a7c15ull * round));
    std::shuffle(order.begin(), order.end(), choose);
    std::vector<bool> gone(files_.size(), false);
    uint64_t since_files = 0, since_bytes = 0;
    // the accounting as of the last check, less what was deleted since (in whole blocks)
    sync_fs(dir_);
    uint64_t used = usage(dir_).used;
    for (const size_t i : order) {
      if (cancelled()) return failure("interrupted");
      if (used <= target_) break;
      // a file whose going would take it well below PCT (a 64 MiB one of a small image) is
      // passed over for smaller ones: the prune ends within a check's bytes of PCT
      const uint64_t blocks = (files_[i].size + 4095) / 4096 * 4096;
      if (used - std::min(used, blocks) + check_every_bytes_ < target_) continue;
      if (::unlink(path_of(files_[i].id).c_str()) != 0)
        return failure("round {}: unlink {}: {}", round, path_of(files_[i].id), std::strerror(errno));
      gone[i] = true;
      ++r_.deleted;
      used -= std::min(used, blocks);
      since_bytes += files_[i].size;
      if (++since_files >= check_every_files || since_bytes >= check_every_bytes_) {
        since_files = since_bytes = 0;
        sync_fs(dir_);
        used = usage(dir_).used;
      }
    }
    std::vector<file> kept;
    for (size_t i = 0; i < files_.size(); ++i)
      if (!gone[i]) kept.push_back(files_[i]);
    files_ = std::move(kept);
    sync_fs(dir_);
    if (progress_)
      progress_(fmt::format("age: churn {}/{}: pruned to {} files, {:.1f}% full", round, p_.churn,
                            files_.size(), 100.0 * usage(dir_).used / usage(dir_).capacity));
    return {};
  }

  std::string dir_, root_;
  age_profile p_;
  size_distribution sizes_;
  std::mt19937_64 rng_;
  const std::atomic<bool>* cancel_;
  const std::function<void(const std::string&)>& progress_;
  std::vector<uint8_t> data_;
  std::vector<file> files_;
  uint64_t next_id_ = 0, target_ = 0, check_every_bytes_ = 0;
  bool appending_ = false;
  age_result r_;
};

// nftw has no user pointer.
layout_stats* walking = nullptr;
const char* walk_skipping = nullptr;
int walk_one(const char* path, const struct stat* st, int type, struct FTW* at) {
  if (type == FTW_D && at->level == 1 && walk_skipping &&
      std::strcmp(path + at->base, walk_skipping) == 0)
    return FTW_SKIP_SUBTREE;
  if (type != FTW_F || !S_ISREG(st->st_mode) || st->st_size == 0) return FTW_CONTINUE;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return 0;
  constexpr unsigned max_extents = 256;
  std::vector<uint8_t> buf(sizeof(fiemap) + max_extents * sizeof(fiemap_extent));
  auto* fm = reinterpret_cast<fiemap*>(buf.data());
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  uint64_t start = 0;
  for (bool last = false; !last;) {
    std::memset(buf.data(), 0, buf.size());
    fm->fm_start = start;
    fm->fm_length = FIEMAP_MAX_OFFSET - start;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = max_extents;
    if (::ioctl(fd, FS_IOC_FIEMAP, fm) != 0 || fm->fm_mapped_extents == 0) break;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
      const fiemap_extent& e = fm->fm_extents[i];
      if (!(e.fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE)))
        extents.emplace_back(e.fe_physical, e.fe_length);
      if (e.fe_flags & FIEMAP_EXTENT_LAST) last = true;
      if (e.fe_logical + e.fe_length <= start) last = true;  // no progress: stop
      start = e.fe_logical + e.fe_length;
    }
  }
  ::close(fd);
  walking->bytes += static_cast<uint64_t>(st->st_size);
  add_extents(*walking, extents);
  return 0;
}

// Regular files and their bytes beneath `dir`.
std::pair<uint64_t, uint64_t> files_beneath(const std::string& dir) {
  uint64_t files = 0, bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e;
    if (it->is_regular_file(e) && !it->is_symlink(e)) ++files, bytes += it->file_size(e);
  }
  return {files, bytes};
}

result<age_result> age_by_replay(const std::string& dir, const age_profile& p,
                                 const std::atomic<bool>* cancel,
                                 const std::function<void(const std::string&)>& progress) {
  const uint64_t t0 = monotonic_ns();
  const std::string root = dir + "/.fsrr-aged";
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST)
    return failure("mkdir {}: {}", root, std::strerror(errno));
  result<trace_reader> trace = trace_reader::open(p.replay);
  if (!trace) return failure(trace.error(), fmt::format("replay={}: ", p.replay));
  result<data_spec> data = data_spec::parse("random", 0, p.seed);
  if (!data) return failure(data.error());
  const data_source source(*data);
  age_result r;
  const auto gen = [&](unsigned n) { return fmt::format("{}/gen-{:04}", root, n); };
  for (unsigned round = 1; round <= p.rounds; ++round) {
    if (cancel && cancel->load()) return failure("interrupted");
    replay_options ro;
    ro.target = gen(round);
    ro.timing = "afap";
    ro.data = *data;
    ro.cancel = cancel;
    if (::mkdir(ro.target.c_str(), 0755) != 0)
      return failure("mkdir {}: {}", ro.target, std::strerror(errno));
    replay_setup setup;
    setup.source = &source;
    result<replay_job> job = replay_job::open(*trace, ro, std::move(setup));
    if (!job) return failure(job.error(), fmt::format("replay={}: ", p.replay));
    // out of room or inodes: statvfs says so (data, metadata and inodes alike, as the
    // kernel's ENOSPC does), whatever call met it first
    const auto out_of_room = [&] {
      struct statvfs v {};
      if (::statvfs(dir.c_str(), &v) != 0) return false;
      return uint64_t{v.f_bavail} * v.f_frsize < (64ull << 20) || v.f_favail < 64 ||
             (v.f_files > 0 && v.f_ffree == 0);
    };
    bool full = false;
    if (result<void> prepared = job->prepare(); !prepared) {
      if (!out_of_room()) return failure(prepared.error(), fmt::format("replay={}: ", p.replay));
      full = true;
    } else {
      const replay_outcome out = job->run();
      if (cancel && cancel->load()) return failure("interrupted");
      uint64_t enospc = 0;
      for (const op_stats& st : out.report.replay.ops)
        enospc += st.errnos.count(ENOSPC) ? st.errnos.at(ENOSPC) : 0;
      // an ENOSPC the recording had too matches; one it did not is a full file system
      full = (enospc > 0 && out.report.replay.mismatches > 0) || out_of_room();
      if (!full && out.status != 0)
        return failure("replay={}: generation {} stopped early: {}", p.replay, round,
                       out.report.replay.stopped.empty() ? "prepare errors" : out.report.replay.stopped);
    }
    sync_fs(dir);
    r.written += files_beneath(ro.target).first;
    if (full) {  // a generation cut short by a full file system is not one to keep
      const uint64_t cut = files_beneath(ro.target).first;
      std::error_code ec;
      std::filesystem::remove_all(ro.target, ec);
      r.deleted += cut;
      r.full_early = true;
      break;
    }
    if (round > p.keep) {
      const std::string old = gen(round - p.keep);
      r.deleted += files_beneath(old).first;
      std::error_code ec;
      std::filesystem::remove_all(old, ec);
      if (ec) return failure("{}: {}", old, ec.message());
    }
    if (progress) {
      const fs_usage u = usage(dir);
      progress(fmt::format("age: replay {}/{}: {:.1f}% full", round, p.rounds,
                           100.0 * u.used / std::max<uint64_t>(1, u.capacity)));
    }
  }
  sync_fs(dir);
  std::tie(r.files, r.bytes) = files_beneath(root);
  const fs_usage end = usage(dir);
  r.fill = end.capacity ? double(end.used) / double(end.capacity) : 0;
  r.wall_ns = monotonic_ns() - t0;
  return r;
}

uint64_t bytes_of_unit(std::string_view s) {  // "64M", "4K", "1G"
  uint64_t n = 0;
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') n = n * 10 + (s[i++] - '0');
  const char unit = i < s.size() ? s[i] : ' ';
  return n << (unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : unit == 'T' ? 40 : 0);
}

}  // namespace

result<age_profile> parse_age_profile(std::string_view text) {
  age_profile p;
  p.text = std::string(text);
  if (text == "none") return p;
  bool filled = false, sized = false, churned = false, counted = false;
  for (std::string_view rest = text; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "fill") {
      const auto n = number(value);
      if (!n || *n < 1 || *n > 98) return failure("--age {}: fill=PCT takes 1 to 98", text);
      p.fill = *n / 100.0;
      filled = true;
    } else if (key == "churn") {
      const auto n = number(value);
      if (!n || *n > 100) return failure("--age {}: churn=N takes 0 to 100 rounds", text);
      p.churn = static_cast<unsigned>(*n);
      churned = true;
    } else if (key == "sizes") {
      p.sizes = std::string(value);
      sized = true;
      if (auto d = size_distribution::named(p.sizes); !d) return failure(d.error(), fmt::format("--age {}: ", text));
    } else if (key == "seed") {
      const auto n = number(value);
      if (!n) return failure("--age {}: seed=S takes a number", text);
      p.seed = *n;
    } else if (key == "replay") {
      p.replay = std::string(value);
      struct stat st;
      if (p.replay.empty() || ::stat(p.replay.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return failure("--age {}: replay=TRACE names no trace file", text);
    } else if (key == "rounds" || key == "keep") {
      const auto n = number(value);
      if (!n || *n < 1 || *n > 10000) return failure("--age {}: {}=N takes 1 to 10000", text, key);
      (key == "rounds" ? p.rounds : p.keep) = static_cast<unsigned>(*n);
      counted = true;
    } else {
      return failure("--age {}: none, fill=PCT[,churn=N][,sizes=backup|home|maildir|mixed|trace:FILE][,seed=S] "
                     "or replay=TRACE[,rounds=N][,keep=K][,seed=S]",
                     text);
    }
  }
  if (!p.replay.empty()) {
    if (filled || churned || sized)
      return failure("--age {}: replay=TRACE ages by replaying, without fill, churn or sizes", text);
    return p;
  }
  if (counted) return failure("--age {}: rounds and keep go with replay=TRACE", text);
  if (!filled) return failure("--age {}: fill=PCT (or replay=TRACE) is needed", text);
  if (p.churn > 0 && p.fill > 0.90)
    return failure("--age {}: churn needs room above the fill: fill=PCT up to 90 with churn", text);
  return p;
}

result<size_distribution> size_distribution::named(const std::string& name) {
  size_distribution d;
  const auto add = [&](double w, uint64_t low, uint64_t high) {
    const double before = d.buckets_.empty() ? 0 : d.buckets_.back().weight;
    d.buckets_.push_back({before + w, low, high});
  };
  if (name == "backup") {  // the seed tree: 100k x 1 KiB, 10k x 4 KiB, 1k x 10 KiB, 100 x 1000 KiB
    const double all = 111100;
    add(100000 / all, 1024, 1024);
    add(10000 / all, 4096, 4096);
    add(1000 / all, 10240, 10240);
    add(100 / all, 1024000, 1024000);
  } else if (name == "home") {  // many small, some documents, a few media files
    add(0.60, 1 << 10, 16 << 10);
    add(0.35, 16 << 10, 1 << 20);
    add(0.05, 1 << 20, 64 << 20);
  } else if (name == "maildir") {  // one file per message
    add(1.0, 2 << 10, 64 << 10);
  } else if (name == "mixed") {
    add(1.0, 4 << 10, 16 << 20);
  } else if (name.starts_with("trace:")) {
    auto trace = trace_reader::open(name.substr(6));
    if (!trace) return failure(trace.error(), "sizes=" + name + ": ");
    for (const tree_entry& t : trace->tree())
      if (S_ISREG(t.mode)) d.sizes_.push_back(t.size);
    if (d.sizes_.empty()) return failure("sizes={}: the trace's tree has no regular file", name);
    return d;
  } else {
    return failure("sizes={}: backup, home, maildir, mixed or trace:FILE", name);
  }
  d.buckets_.back().weight = 1.0;
  return d;
}

uint64_t size_distribution::largest() const {
  if (!sizes_.empty()) return *std::max_element(sizes_.begin(), sizes_.end());
  uint64_t most = 0;
  for (const bucket& b : buckets_) most = std::max(most, b.high);
  return most;
}

uint64_t size_distribution::draw(uint64_t random) const {
  if (!sizes_.empty()) return sizes_[random % sizes_.size()];
  const double u = static_cast<double>(random >> 11) / 9007199254740992.0;  // [0, 1)
  const bucket* b = &buckets_.back();
  for (const bucket& k : buckets_)
    if (u < k.weight) {
      b = &k;
      break;
    }
  if (b->low == b->high) return b->low;
  // log-uniform within the bucket, from the same number's low bits
  const double v = static_cast<double>(random & 0x7ff) / 2048.0;
  return static_cast<uint64_t>(std::exp(std::log(double(b->low)) +
                                        v * (std::log(double(b->high)) - std::log(double(b->low)))));
}

result<age_result> age(const std::string& dir, const age_profile& profile,
                       const std::atomic<bool>* cancel,
                       const std::function<void(const std::string&)>& progress) {
  auto sizes = size_distribution::named(profile.sizes);
  if (!sizes) return tl::unexpected(sizes.error());
  if (!profile.replay.empty()) return age_by_replay(dir, profile, cancel, progress);
  if (profile.fill <= 0) return age_result{};
  ager a(dir, profile, std::move(*sizes), cancel, progress);
  return a.run();
}

void add_extents(layout_stats& s, const std::vector<std::pair<uint64_t, uint64_t>>& extents,
                 uint64_t block) {
  ++s.files;
  s.extents += extents.size();
  uint64_t blocks = 0, contiguous = 0, prev_end = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    const auto [start, length] = extents[i];
    const uint64_t n = (length + block - 1) / block;
    if (n == 0) continue;
    // within an extent every block but the first follows its predecessor; the first does
    // when the extent starts where the one before ended
    contiguous += n - 1 + (blocks > 0 && start == prev_end ? 1 : 0);
    blocks += n;
    prev_end = start + length;
  }
  s.blocks += blocks;
  s.contiguous += contiguous;
  if (blocks > 1) s.pairs += blocks - 1;
}

result<layout_stats> layout_of(const std::string& dir, const std::string& skip) {
  layout_stats s;
  walking = &s;
  walk_skipping = skip.empty() ? nullptr : skip.c_str();
  const int r = ::nftw(dir.c_str(), walk_one, 32, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL);
  walking = nullptr;
  walk_skipping = nullptr;
  if (r != 0) return failure("{}: {}", dir, std::strerror(errno));
  return s;
}

free_space free_space_of(const std::string& kind, const std::string& device) {
  free_space f;
  if (kind == "ext4" || kind == "ext3" || kind == "ext2") {
    const command_result r = run_command({"e2freefrag", device});
    if (r.status != 0) return f;
    std::istringstream in(r.output);
    bool histogram = false;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("Num. free extent:")) f.fragments = std::stoll(line.substr(17));
      if (line.starts_with("Extent Size Range")) histogram = true;
      else if (histogram && line.find(':') != std::string::npos) {
        std::istringstream row(line);
        std::string low, dots, colon;
        uint64_t count = 0;
        row >> low;
        const size_t at = line.find(':');
        std::istringstream counts(line.substr(at + 1));
        counts >> count;
        f.histogram.emplace_back(bytes_of_unit(low.substr(0, low.find('.'))), count);
      }
    }
  } else if (kind == "xfs") {
    const command_result r = run_command({"xfs_db", "-r", "-c", "freesp -s", device});
    if (r.status != 0) return f;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("total free extents ")) f.fragments = std::stoll(line.substr(19));
      std::istringstream row(line);
      uint64_t from = 0, to = 0, extents = 0;
      if (row >> from >> to >> extents) f.histogram.emplace_back(from * 4096, extents);
    }
  }
  return f;
}

}  // namespace fsrr::lab
