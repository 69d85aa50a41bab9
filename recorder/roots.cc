#include "roots.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <utility>

#include <fmt/format.h>

namespace fsrr::recorder {
namespace {

// Fills d.key, d.dev and d.mount_root for the root directory d.fd (O_PATH), seen through the
// mount namespace `ns_link`.
bool describe(root_dir& d, const std::string& ns_link) {
  struct statx sx {};
  struct stat ns {};
  if (::statx(d.fd.get(), "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &sx) != 0 ||
      !(sx.stx_mask & STATX_MNT_ID) || ::stat(ns_link.c_str(), &ns) != 0)
    return false;
  d.key = {sx.stx_ino, static_cast<uint32_t>(sx.stx_mnt_id), static_cast<uint32_t>(ns.st_ino)};
  d.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
  d.mount_root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                 (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
  return true;
}

std::string link_target(const std::string& link) {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("?");
}

}  // namespace

result<root_registry> root_registry::open() {
  root_dir self;
  self.fd.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!self.fd || !describe(self, "/proc/self/ns/mnt"))
    return failure("cannot look at fsrr's own root (is /proc mounted?)");
  self.where = "/";
  self.mounts = mount_table::of("/proc/self/mountinfo");
  root_registry r;
  r.dirs_.push_back(std::move(self));
  r.self_ = &r.dirs_.front();
  return r;
}

// A deque's elements stay where they are when it moves: self_ and the callers' pointers hold.
root_registry::root_registry(root_registry&& o) noexcept
    : dirs_(std::move(o.dirs_)),
      self_(std::exchange(o.self_, nullptr)),
      on_new_(std::move(o.on_new_)) {}

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
  root_dir d;
  d.fd.reset(::open((proc + "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!d.fd || !describe(d, proc + "ns/mnt")) return nullptr;
  std::lock_guard lock(mu_);
  if (const root_dir* known = find_locked(d.key)) return known;
  if (dirs_.size() >= max_held) {  // known by key; not held
    d.fd.reset();
    d.where = "?";
    return &add_locked(std::move(d));
  }
  d.ns_fd.reset(::open((proc + "ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
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
