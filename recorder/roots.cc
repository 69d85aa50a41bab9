#include "roots.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include <fmt/format.h>

#include "trace_error.h"

namespace fsrr::recorder {
namespace {

// The key of the root directory `fd` (O_PATH), seen through the mount namespace `ns_link`.
bool key_of(int fd, const std::string& ns_link, root_key& k, bool* mount_root = nullptr) {
  struct statx sx {};
  struct stat ns {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &sx) != 0 ||
      !(sx.stx_mask & STATX_MNT_ID) || ::stat(ns_link.c_str(), &ns) != 0)
    return false;
  k = {sx.stx_ino, sx.stx_dev_major << 20 | sx.stx_dev_minor, static_cast<uint32_t>(sx.stx_mnt_id),
       static_cast<uint32_t>(ns.st_ino)};
  if (mount_root)
    *mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                  (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  return true;
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
  if (self.fd < 0 || !key_of(self.fd, "/proc/self/ns/mnt", self.key, &self.mount_root))
    throw trace_error("cannot look at fsrr's own root (is /proc mounted?)");
  self.where = "/";
  self.mounts = mount_table::of("/proc/self/mountinfo");
  dirs_.push_back(std::move(self));
}

root_registry::~root_registry() {
  for (const root_dir& d : dirs_)
    for (int fd : {d.fd, d.ns_fd})
      if (fd >= 0) ::close(fd);
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
  dirs_.push_back(std::move(d));
  if (on_new_) on_new_(dirs_.back().key);
  return dirs_.back();
}

const root_dir* root_registry::grab(pid_t pid) {
  const std::string proc = fmt::format("/proc/{}/", pid);
  const int fd = ::open((proc + "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  root_key key;
  if (!key_of(fd, proc + "ns/mnt", key)) {
    ::close(fd);
    return nullptr;
  }
  std::lock_guard lock(mu_);
  if (const root_dir* known = find_locked(key)) {
    ::close(fd);
    return known;
  }
  root_dir d;
  d.key = key;
  d.fd = fd;
  d.ns_fd = ::open((proc + "ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  d.where = link_target(proc + "root");
  d.mounts = mount_table::of(proc + "mountinfo");
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
