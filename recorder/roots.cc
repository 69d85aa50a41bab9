#include "roots.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>

#include <fmt/format.h>

#include "trace_error.h"

namespace fsrr::recorder {
namespace {

// Fills d.key, d.dev and d.mount_root for the root directory d.fd (O_PATH), seen through the
// mount namespace `ns_link`.
bool describe(root_dir& d, const std::string& ns_link) {
  struct statx sx {};
  struct stat ns {};
  if (::statx(d.fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &sx) != 0 ||
      !(sx.stx_mask & STATX_MNT_ID) || ::stat(ns_link.c_str(), &ns) != 0)
    return false;
  d.key = {sx.stx_ino, static_cast<uint32_t>(sx.stx_mnt_id), static_cast<uint32_t>(ns.st_ino)};
  d.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  d.mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                 (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  return true;
}

void close_fds(const root_dir& d) {
  for (int fd : {d.fd, d.ns_fd})
    if (fd >= 0) ::close(fd);
}

std::string link_target(const std::string& link) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
}

}  // namespace

root_registry::root_registry() {
  root_dir self;
  self.fd = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (self.fd < 0 || !describe(self, "/proc/self/ns/mnt")) {
    close_fds(self);
    throw trace_error("cannot look at fsrr's own root (is /proc mounted?)");
  }
  self.where = "/";
  try {
    self.mounts = mount_table::of("/proc/self/mountinfo");
    dirs_.push_back(std::move(self));
  } catch (...) {
    close_fds(self);
    throw;
  }
  self_ = &dirs_.front();
}

root_registry::~root_registry() {
  for (const root_dir& d : dirs_) close_fds(d);
}

void root_registry::on_new(std::function<void(const root_key&)> f) {
  std::lock_guard lock(mu_);
  on_new_ = std::move(f);
  if (on_new_)
    for (const root_dir& d : dirs_) on_new_(d.key);
}

const root_dir* root_registry::find_locked(const root_key& key) const {
  for (const root_dir& d : dirs_)
    if (d.key == key) return &d;
  return nullptr;
}

const root_dir& root_registry::add_locked(root_dir d) {
  try {
    dirs_.push_back(std::move(d));
  } catch (...) {
    close_fds(d);
    throw;
  }
  if (on_new_) on_new_(dirs_.back().key);
  return dirs_.back();
}

const root_dir* root_registry::grab(pid_t pid) {
  const std::string proc = fmt::format("/proc/{}/", pid);
  root_dir d;
  d.fd = ::open((proc + "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (d.fd < 0) return nullptr;
  if (!describe(d, proc + "ns/mnt")) {
    close_fds(d);
    return nullptr;
  }
  std::lock_guard lock(mu_);
  if (const root_dir* known = find_locked(d.key)) {
    close_fds(d);
    return known;
  }
  if (dirs_.size() >= max_held) {  // known by key; not held
    ::close(d.fd);
    d.fd = -1;
    d.where = "?";
    return &add_locked(std::move(d));
  }
  d.ns_fd = ::open((proc + "ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  d.where = link_target(proc + "root");
  try {
    d.mounts = mount_table::of(proc + "mountinfo");
  } catch (...) {
    close_fds(d);
    throw;
  }
  return &add_locked(std::move(d));
}

const root_dir& root_registry::find_or_grab(const root_key& key, pid_t pid) {
  {
    std::lock_guard lock(mu_);
    if (const root_dir* known = find_locked(key)) return *known;
  }
  if (const root_dir* d = grab(pid); d && d->key == key) return *d;
  std::lock_guard lock(mu_);
  if (const root_dir* known = find_locked(key)) return *known;
  root_dir d;
  d.key = key;
  d.where = "?";
  return add_locked(std::move(d));
}

}  // namespace fsrr::recorder
