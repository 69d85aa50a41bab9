#include "aged_image.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "clock.h"
#include "command.h"
#include "made_fs.h"

namespace fsrr::lab {
namespace {

// An image mounted on a directory of its own for as long as this lives.
class mounted_image {
 public:
  ~mounted_image() {
    if (mounted_ && run_command({"umount", dir_}, {.keep_output = false}).status != 0)
      run_command({"umount", "-l", dir_}, {.keep_output = false});
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  result<void> mount(const std::string& image, const fs_layer& l) {
    char dir[] = "/dev/shm/fsrr-age.XXXXXX";
    if (!::mkdtemp(dir)) return failure("mkdtemp: {}", std::strerror(errno));
    dir_ = dir;
    const command_result r = run_command(
        {"mount", "-o", "loop,nosuid,nodev" + (l.mount_opts.empty() ? "" : "," + l.mount_opts),
         image, dir_});
    if (r.status != 0) return failure("mount {}: {}", image, last_line(r.output));
    mounted_ = true;
    return {};
  }
  // Unmounted now, or an error (then detached lazily, so that nothing stays in the way).
  result<void> unmount() {
    mounted_ = false;
    const command_result r = run_command({"umount", dir_});
    if (r.status == 0) return {};
    run_command({"umount", "-l", dir_}, {.keep_output = false});
    return failure("umount {}: {}", dir_, last_line(r.output));
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

nlohmann::json layout_json(const layout_stats& s) {
  return {{"score", s.score()},           {"extents_per_file", s.extents_per_file()},
          {"extents_per_mib", s.extents_per_mib()}, {"files", s.files},
          {"blocks", s.blocks},           {"extents", s.extents},
          {"contiguous", s.contiguous},   {"pairs", s.pairs},
          {"bytes", s.bytes}};
}

// The cache's record of an image, read back; a key of the wrong type throws (the caller takes
// such a record for none).
aged_image from_json(const nlohmann::json& j) {
  aged_image a;
  a.aged.files = j.value("files", uint64_t{0});
  a.aged.bytes = j.value("bytes", uint64_t{0});
  a.aged.written = j.value("written", uint64_t{0});
  a.aged.deleted = j.value("deleted", uint64_t{0});
  a.aged.appends = j.value("appends", uint64_t{0});
  a.aged.fill = j.value("fill", 0.0);
  a.aged.full_early = j.value("full_early", false);
  a.aged.wall_ns = j.value("wall_ns", uint64_t{0});
  const auto frag = j.value("free_space_fragments", nlohmann::json());
  a.free.fragments = frag.is_number_integer() ? frag.get<int64_t>() : -1;
  for (const auto& h : j.value("free_space_histogram", nlohmann::json::array()))
    a.free.histogram.emplace_back(h.value("from_bytes", uint64_t{0}), h.value("count", uint64_t{0}));
  const auto l = j.value("layout", nlohmann::json::object());
  a.layout.files = l.value("files", uint64_t{0});
  a.layout.blocks = l.value("blocks", uint64_t{0});
  a.layout.extents = l.value("extents", uint64_t{0});
  a.layout.contiguous = l.value("contiguous", uint64_t{0});
  a.layout.pairs = l.value("pairs", uint64_t{0});
  a.layout.bytes = l.value("bytes", uint64_t{0});
  return a;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Flushes a file's data to its disk: a whole image or record survives a power cut as whole.
result<void> flush_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return failure("{}: {}", path, std::strerror(err));
  }
  ::close(fd);
  return {};
}

// `text` at `path`, whole or not at all: written to a new file beside it (never through a
// symlink), flushed, renamed.
result<void> write_whole(const std::string& path, const std::string& text) {
  const std::string part = fmt::format("{}.part-{}", path, ::getpid());
  ::unlink(part.c_str());
  const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return failure("{}: {}", part, std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(part.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(part.c_str());
    return failure("{}: {}", path, std::strerror(err));
  }
  return {};
}

// The cache directory: made (0700) if missing; else it must be a directory of this user's
// that no one else may write to, not a symlink — root mounts the images it finds there.
result<void> private_dir(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return failure("--age-cache {}: {}", dir, std::strerror(errno));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return failure("--age-cache {}: {}", dir, std::strerror(errno));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022))
    return failure("--age-cache {}: not a directory of this user's that only it may write to "
                   "(owner {}, mode {:o}): refusing to mount images from it",
                   dir, st.st_uid, st.st_mode & 07777);
  return {};
}

// An exclusive lock on `path` (made if missing) for as long as this lives: one compare at a
// time looks up, makes or replaces an aged image.
class file_lock {
 public:
  static result<file_lock> take(const std::string& path) {
    file_lock l;
    l.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (l.fd_ < 0) return failure("{}: {}", path, std::strerror(errno));
    if (::flock(l.fd_, LOCK_EX) != 0) return failure("lock {}: {}", path, std::strerror(errno));
    return l;
  }
  file_lock() = default;
  file_lock(file_lock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ~file_lock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

}  // namespace

nlohmann::json aged_image::json() const {
  nlohmann::json hist = nlohmann::json::array();
  for (const auto& [low, n] : free.histogram) hist.push_back({{"from_bytes", low}, {"count", n}});
  return {{"age", profile.text},
          {"image", path},
          {"cached", cached},
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
          {"layout", layout_json(layout)}};
}

result<aged_image> make_aged_image(const fs_layer& l, uint64_t size, const age_profile& profile,
                                   const std::string& image, const std::atomic<bool>* cancel,
                                   const std::function<void(const std::string&)>& progress) {
  const uint64_t start = monotonic_ns();
  FSRR_TRY(make_image(image, size));
  struct remove_on_error {  // a half-made image is not one to reuse
    const std::string& path;
    bool done = false;
    ~remove_on_error() {
      if (!done) ::unlink(path.c_str());
    }
  } guard{image};
  const auto argv = mkfs_argv(l, image);
  if (const command_result r = run_command(argv); r.status != 0)
    return failure("{} failed: {}", argv[0], last_line(r.output));
  aged_image a;
  a.path = image;
  a.profile = profile;
  {
    mounted_image m;
    FSRR_TRY(m.mount(image, l));
    result<age_result> aged = age(m.dir(), profile, cancel, progress);
    if (!aged) return failure(aged.error());
    a.aged = *aged;
    result<layout_stats> layout = layout_of(m.dir() + "/.fsrr-aged");
    if (!layout) return failure(layout.error());
    a.layout = *layout;
    // the blocks aging freed handed back to the image's own file system (the loop device
    // punches holes): the image takes the room of what it holds, not of all aging wrote
    run_command({"fstrim", m.dir()}, {.keep_output = false});
    FSRR_TRY(m.unmount());
  }
  // read from the unmounted image: mounted, its bitmaps on disk may be behind
  a.free = free_space_of(l.kind, image);
  a.make_ns = monotonic_ns() - start;
  guard.done = true;
  return a;
}

// Raised whenever what aging writes changes: images of an older way are not found.
constexpr int aging_model = 3;

std::string aged_image_key(const fs_layer& l, uint64_t size, const age_profile& p) {
  utsname u{};
  ::uname(&u);
  const auto as_now = [](const std::string& file) {  // a trace as it is now, and which one
    struct stat st {};
    ::stat(file.c_str(), &st);
    std::error_code ec;
    const auto real = std::filesystem::canonical(file, ec);
    return fmt::format("@{}:{}:{}:{}:{}.{}", ec ? file : real.string(), st.st_dev, st.st_ino,
                       st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  };
  std::string sizes = p.sizes;
  if (sizes.starts_with("trace:")) sizes += as_now(sizes.substr(6));
  if (!p.replay.empty())
    sizes = fmt::format("replay={}{},rounds={},keep={}", p.replay, as_now(p.replay), p.rounds,
                        p.keep);
  return fmt::format(
      "fsrr {} aging {}; kernel {}; {} ({}); mkfs={}; mount={}; size={}; "
      "fill={},churn={},sizes={},seed={}",
      FSRR_VERSION, aging_model, u.release, l.kind, tool_version("mkfs." + l.kind), l.mkfs_opts, l.mount_opts,
      size, static_cast<unsigned>(p.fill * 100 + 0.5), p.churn, sizes, p.seed);
}

result<aged_image> cached_aged_image(const fs_layer& l, uint64_t size, const age_profile& profile,
                                     const std::string& cache_dir, const std::atomic<bool>* cancel,
                                     const std::function<void(const std::string&)>& progress) {
  FSRR_TRY(private_dir(cache_dir));
  const std::string key = aged_image_key(l, size, profile);
  const std::string stem = fmt::format("{}/aged-{}-{:016x}", cache_dir, l.kind, fnv1a(key));
  const std::string image = stem + ".img", record = stem + ".json";
  result<file_lock> lock = file_lock::take(stem + ".lock");
  if (!lock) return failure(lock.error());
  if (std::ifstream in(record); in) {
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    struct stat st {};
    try {
      if (j.is_object() && j.value("key", "") == key && ::lstat(image.c_str(), &st) == 0 &&
          S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == size) {
        aged_image a = from_json(j);
        a.path = image;
        a.profile = profile;
        a.cached = true;
        return a;
      }
    } catch (const nlohmann::json::exception&) {  // a damaged record: made anew
    }
  }
  // Made beside it, and named so only when whole and on disk: a half-made image is never
  // found. Parts an earlier compare left (killed) are this lock's to remove.
  ::unlink(record.c_str());
  ::unlink(image.c_str());
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cache_dir, ec))
    if (e.path().filename().string().starts_with(std::filesystem::path(image).filename().string() +
                                                 ".part-"))
      ::unlink(e.path().c_str());
  // room for it where the cache is (the image is trimmed to what aging left)
  const uint64_t need = (profile.fill > 0 ? static_cast<uint64_t>(size * profile.fill) : size) +
                        (64ull << 20);
  if (struct statvfs v {}; ::statvfs(cache_dir.c_str(), &v) == 0 &&
                           uint64_t{v.f_bavail} * v.f_frsize < need)
    return failure(
        "--age-cache {} has {:.1f} GiB free; the aged image of {} ({}) takes about {:.1f} GiB "
        "(--age-cache DIR puts them elsewhere)",
        cache_dir, uint64_t{v.f_bavail} * v.f_frsize / 1073741824.0, l.kind, profile.text,
        need / 1073741824.0);
  const std::string part = fmt::format("{}.part-{}", image, ::getpid());
  result<aged_image> made = make_aged_image(l, size, profile, part, cancel, progress);
  if (!made) return made;
  if (result<void> flushed = flush_file(part); !flushed || ::rename(part.c_str(), image.c_str()) != 0) {
    const std::string why = flushed ? std::strerror(errno) : flushed.error().message;
    ::unlink(part.c_str());
    return failure("{}: {}", image, why);
  }
  made->path = image;
  nlohmann::json j = made->json();
  j["key"] = key;
  j.erase("cached");
  if (result<void> w = write_whole(record, j.dump(2) + "\n"); !w) {
    ::unlink(image.c_str());
    return failure(w.error());
  }
  return made;
}

}  // namespace fsrr::lab
