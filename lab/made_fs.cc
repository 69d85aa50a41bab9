#include "made_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "clock.h"
#include "command.h"

namespace fsrr::lab {
namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string cached_version(const std::string& program) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mu);
  auto [it, added] = known.try_emplace(program);
  if (added) it->second = tool_version(program);
  return it->second;
}

result<void> must(const command_result& r, const std::string& what) {
  if (r.status == 0) return {};
  return failure("{} failed ({}): {}", what, r.status, last_line(r.output));
}

bool empty_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool empty = true;
  while (const dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) empty = false;
  ::closedir(d);
  return empty;
}

// Removes what is inside `dir`, not `dir` itself, staying on its file system.
void clear_dir(const std::string& dir) {
  std::error_code ec;
  struct stat top;
  if (::lstat(dir.c_str(), &top) != 0) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    struct stat st;
    if (::lstat(entry.path().c_str(), &st) != 0 || st.st_dev != top.st_dev) continue;
    std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace

result<void> make_image(const std::string& path, uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return failure("image {}: {}", path, std::strerror(err));
  }
  ::close(fd);
  return {};
}

result<void> copy_image(const std::string& from, const std::string& to) {
  struct stat st;
  if (::lstat(to.c_str(), &st) == 0) return failure("{} exists: not copying an image over it", to);
  const command_result r =
      run_command({"cp", "--reflink=auto", "--sparse=always", "--", from, to});
  if (r.status != 0) {
    ::unlink(to.c_str());
    return failure("copy of {}: {}", from, last_line(r.output));
  }
  return {};
}

std::vector<std::string> mkfs_argv(const fs_layer& l, const std::string& image) {
  std::vector<std::string> argv{"mkfs." + l.kind};
  if (l.kind.rfind("ext", 0) == 0)
    argv.insert(argv.end(), {"-q", "-F"});
  else if (l.kind == "xfs" || l.kind == "btrfs")
    argv.insert(argv.end(), {"-q", "-f"});
  for (auto& w : words(l.mkfs_opts)) argv.push_back(w);
  argv.push_back(image);
  return argv;
}


uint64_t min_image_bytes(const std::string& kind) {
  return kind == "tmpfs" ? 64ull << 20 : 4ull << 30;
}

result<std::unique_ptr<made_fs>> made_fs::make(const fs_spec& spec, const std::string& images,
                                               uint64_t size, const std::string& from_image) {
  const uint64_t start = monotonic_ns();
  std::unique_ptr<made_fs> fs(new made_fs);
  if (spec.existing()) {
    struct stat st;
    if (::stat(spec.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return failure("--fs {}: not a directory", spec.name);
    if (!empty_dir(spec.dir))
      return failure("--fs {}: {} is not empty; compare only uses empty directories", spec.name,
                     spec.dir);
    fs->existing_ = spec.dir;  // from here on, emptied again when done with
    fs->path_ = spec.dir;
    fs->device_ = fmt::format("existing directory {}", spec.dir);
  } else {
    if (!from_image.empty() && (spec.layers.size() != 1 || spec.layers[0].kind == "tmpfs"))
      return failure("--fs {}: only an image of one block file system starts from a made one",
                     spec.name);
    FSRR_TRY(fs->make_layers(spec, images, size, from_image));  // on an error, fs undoes what it made
  }
  fs->make_ns_ = monotonic_ns() - start;
  return fs;
}

result<void> made_fs::make_layers(const fs_spec& spec, const std::string& images, uint64_t size,
                                  const std::string& from_image) {
  // Outermost first: each inner image needs the room of what it holds.
  std::string where = images;
  const auto own = [&](const fs_layer& l) {
    return l.size ? l.size : std::max<uint64_t>(size, min_image_bytes(l.kind));
  };
  for (size_t i = spec.layers.size(); i-- > 0;) {
    uint64_t bytes = own(spec.layers[i]);
    if (i > 0 && !spec.layers[i].size) {  // room for the inner layers' images, and metadata
      uint64_t need = 0;
      for (size_t k = 0; k < i; ++k) need += own(spec.layers[k]);
      bytes = std::max<uint64_t>(bytes, need + need / 8 + (64ull << 20));
    }
    FSRR_TRY(make_layer(spec.layers[i], where, bytes, i == 0, i == 0 ? from_image : ""));
    where = made_.back().mount_point;
  }
  path_ = made_.back().mount_point;
  return {};
}

made_fs::~made_fs() {
  tear_down();
}

uint64_t made_fs::unmake() {
  const uint64_t start = monotonic_ns();
  tear_down();
  return monotonic_ns() - start;
}

result<void> made_fs::make_layer(const fs_layer& l, const std::string& where, uint64_t size,
                                 bool measured, const std::string& from_image) {
  // Listed before anything is made: tear_down undoes whatever part of it happened.
  static std::atomic<unsigned> made_so_far{0};
  const unsigned n = made_so_far++;
  made_.push_back({fmt::format("{}/{}-{}.mnt", where, l.kind, n), ""});
  layer& made = made_.back();
  if (::mkdir(made.mount_point.c_str(), 0755) != 0)
    return failure("mkdir {}: {}", made.mount_point, std::strerror(errno));
  std::vector<std::string> mount_argv;
  std::string device, mkfs_line;
  if (l.kind == "tmpfs") {
    mount_argv = {"mount",
                  "-t",
                  "tmpfs",
                  "-o",
                  fmt::format("size={}{}{}", size, l.mount_opts.empty() ? "" : ",", l.mount_opts),
                  "tmpfs",
                  made.mount_point};
    device = fmt::format("tmpfs, {} MiB", size >> 20);
  } else {
    made.image = fmt::format("{}/{}-{}.img", where, l.kind, n);
    const auto argv = mkfs_argv(l, made.image);
    mkfs_line = joined(argv);
    if (from_image.empty()) {
      FSRR_TRY(make_image(made.image, size));
      FSRR_TRY(must(run_command(argv), argv[0]));
    } else {
      FSRR_TRY(copy_image(from_image, made.image));
      mkfs_line += fmt::format(", then aged (a copy of {})", from_image);
      // a UUID of its own: xfs refuses to mount two file systems with one (another compare
      // on a copy of the same image)
      if (l.kind == "xfs")
        FSRR_TRY(must(run_command({"xfs_admin", "-U", "generate", made.image}), "xfs_admin -U"));
    }
    // a copy of an image from the cache: nothing on it may act as a device or set an id
    mount_argv = {"mount", "-o",
                  std::string(from_image.empty() ? "loop" : "loop,nosuid,nodev") +
                      (l.mount_opts.empty() ? "" : "," + l.mount_opts),
                  made.image, made.mount_point};
    device = fmt::format("loop image {}, {} MiB", made.image, size >> 20);
  }
  FSRR_TRY(must(run_command(mount_argv), "mount " + made.mount_point));
  made.mounted = true;
  if (!measured) return {};
  device_ = device;
  if (made_.size() > 1) device_ += ", on " + made_.front().mount_point;  // a stack (seed 002)
  mkfs_ = mkfs_line;
  mount_ = l.mount_opts;
  tool_ = l.kind == "tmpfs" ? "" : cached_version("mkfs." + l.kind);
  return {};
}

void made_fs::tear_down() noexcept {
  if (!existing_.empty()) {
    clear_dir(existing_);  // it was empty: all of it is the run's
    return;
  }
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
    if (it->mounted && run_command({"umount", it->mount_point}).status != 0)
      run_command({"umount", "-l", it->mount_point});  // busy: detached now, gone when free
    if (!it->image.empty()) ::unlink(it->image.c_str());
    ::rmdir(it->mount_point.c_str());
  }
  made_.clear();
}

result<std::string> made_fs::unmount() {
  std::string failed;
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
    if (!it->mounted) continue;
    it->mounted = false;
    const command_result r = run_command({"umount", it->mount_point});
    if (r.status != 0) {
      run_command({"umount", "-l", it->mount_point});
      if (failed.empty()) failed = it->mount_point;
    }
  }
  if (!failed.empty()) return failure("umount {}: busy", failed);
  return made_.empty() ? std::string() : made_.back().image;
}

uint64_t made_fs::used_bytes() const {
  struct statfs s;
  if (::statfs(path_.c_str(), &s) != 0) return 0;
  return static_cast<uint64_t>(s.f_blocks - s.f_bfree) * static_cast<uint64_t>(s.f_bsize);
}

uint64_t made_fs::sync_ns() const {
  const uint64_t start = monotonic_ns();
  const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
  return monotonic_ns() - start;
}

}  // namespace fsrr::lab
