#include "environment.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "kernel_constants.h"

namespace fsrr {
namespace {

constexpr env_row rows[] = {
    {env_cause::cross_device, "cross_device",
     "EXDEV from rename, link or copy_file_range between two file systems"},
    {env_cause::no_clone, "no_clone", "FICLONE/FICLONERANGE refused (EOPNOTSUPP, EXDEV, EINVAL)"},
    {env_cause::no_fallocate, "no_fallocate", "fallocate mode not supported (EOPNOTSUPP)"},
    {env_cause::no_direct_io, "no_direct_io", "O_DIRECT refused (EINVAL on open)"},
    {env_cause::no_xattr, "no_xattr", "xattrs or ACLs not supported (EOPNOTSUPP)"},
    {env_cause::link_limit, "link_limit", "too many links (EMLINK)"},
    {env_cause::name_too_long, "name_too_long", "name too long for the file system (ENAMETOOLONG)"},
    {env_cause::privileged, "privileged",
     "security.* or trusted.* xattr call not issued (replays run without --keep-privileged)"},
    {env_cause::listing_split, "listing_split",
     "getdents returned the directory's entries in other portions (its order on this file "
     "system), the listing's total the same"},
    {env_cause::credentials, "credentials",
     "EACCES where the recorded process had other credentials than the replay's root"},
};
static_assert(std::size(rows) == static_cast<size_t>(env_cause::count));

bool is_open(op k) {
  return info(k).cls == op_class::open;
}

}  // namespace

std::span<const env_row> env_table() {
  return rows;
}

std::string_view name(env_cause c) {
  return rows[static_cast<size_t>(c)].name;
}

bool env_cause_of(const event& e, int64_t err, env_cause& cause) {
  if (err >= 0 || err < -4095) return false;  // a trace's result: not an errno below -MAX_ERRNO
  const op k = e.kind;
  switch (-err) {
    case EACCES:
      // Root is refused by no permission bits: a recorded refusal was the recorded process's
      // credentials (a PATH search by an ordinary user through /root, say).
      if (::geteuid() != 0) break;
      cause = env_cause::credentials;
      return true;
    case EXDEV:
      if (k == op::rename || k == op::renameat || k == op::renameat2 || k == op::link ||
          k == op::linkat || k == op::copy_file_range) {
        cause = env_cause::cross_device;
        return true;
      }
      break;
    case EMLINK:
      if (k == op::link || k == op::linkat || k == op::mkdir || k == op::mkdirat) {
        cause = env_cause::link_limit;
        return true;
      }
      break;
    case ENAMETOOLONG:
      cause = env_cause::name_too_long;
      return info(k).fields & F_PATH;
    default:
      break;
  }
  if (k == op::ioctl && (e.aux == FSRR_FICLONE || e.aux == FSRR_FICLONERANGE) &&
      (err == -EOPNOTSUPP || err == -EXDEV || err == -EINVAL || err == -ENOTTY)) {
    cause = env_cause::no_clone;
    return true;
  }
  if (k == op::fallocate && err == -EOPNOTSUPP) {
    cause = env_cause::no_fallocate;
    return true;
  }
  if (is_open(k) && err == -EINVAL && (e.flags & O_DIRECT)) {
    cause = env_cause::no_direct_io;
    return true;
  }
  if (info(k).cls == op_class::xattr && (err == -EOPNOTSUPP || err == -ENOTSUP)) {
    cause = env_cause::no_xattr;
    return true;
  }
  return false;
}

}  // namespace fsrr
