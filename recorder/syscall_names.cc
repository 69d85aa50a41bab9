// Syscalls on names: mkdir, mknod, rmdir, unlink, rename, link, symlink, and what they
// tell the initial tree.
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstddef>

#include "syscall_ctx.h"

namespace fsrr::recorder {

// bind(2) of a Unix socket to a name makes a socket file, as mknod(S_IFSOCK) would; every
// other bind (an address, an abstract name) is the network's.
void decoder::decode_bind(syscall_ctx& c) {
  event& e = c.e;
  sockaddr_un sun{};
  const auto& u = c.it.user;
  const size_t n = std::min(u.size(), sizeof sun);
  if (n > offsetof(sockaddr_un, sun_path)) std::memcpy(&sun, u.data(), n);
  const std::string_view name(sun.sun_path, ::strnlen(sun.sun_path, sizeof sun.sun_path));
  if (e.result != 0 || sun.sun_family != AF_UNIX || name.empty())
    return w_.add_nonfile(e.kind, fd_kind::socket);
  const path_id base = name.front() == '/' ? top_of(c.t) : fds_.cwd(c.t.fs);
  e.path = paths_.resolve(base == no_id ? top_of(c.t) : base, name);
  if (off_storage(e.path)) return w_.add_nonfile(e.kind, fd_kind::socket);
  e.mode = S_IFSOCK | 0777;  // less the process's umask, which the recorder does not know
  tree_.created(e.path);
  emit(c);
}

void decoder::decode_name(syscall_ctx& c) {
  event& e = c.e;
  const auto& a = c.h.args;
  const bool ok = e.result == 0;
  if (e.kind == op::bind) return decode_bind(c);
  e.path = path_arg(c, 0);
  if (c.cap.path[1]) e.path2 = path_arg(c, 1);
  if (off_storage(e.path) || off_storage(e.path2)) return w_.add_nonfile(e.kind, fd_kind::other);
  // Names resolved earlier may now lead elsewhere, unless only a regular file moved.
  auto moved = [&](const held_file& f) {
    if (f.id == no_id || f.type != S_IFREG) paths_.forget_resolutions();
  };
  switch (e.kind) {
    case op::mkdir:
    case op::mkdirat:
    case op::mknod:
    case op::mknodat: {
      const int at = e.kind == op::mkdirat || e.kind == op::mknodat;
      e.mode = static_cast<uint32_t>(a[1 + at]);
      if (e.kind == op::mknod || e.kind == op::mknodat) e.aux = a[2 + at];
      if (ok) tree_.created(e.path);
      if (e.result == -EEXIST) tree_.existed(e.path);
      break;
    }
    case op::symlink:
    case op::symlinkat:
      if (c.it.str[2]) e.aux = w_.intern_string(*c.it.str[2]);
      if (ok) tree_.created(e.path);
      if (e.result == -EEXIST) tree_.existed(e.path);
      break;
    case op::rmdir:
    case op::unlink:
    case op::unlinkat: {
      if (e.kind == op::unlinkat) e.flags = static_cast<uint32_t>(a[2]);
      const bool dir = e.kind == op::rmdir || (e.flags & at_removedir);
      const held_file gone = held(e.path);
      e.file = gone.id;
      if (ok) {
        tree_.existed(e.path, nullptr, no_id, dir ? S_IFDIR : S_IFREG);
        hold(e.path, {});
        moved(dir ? held_file{} : gone);
      }
      break;
    }
    case op::rename:
    case op::renameat:
    case op::renameat2: {
      if (e.kind == op::renameat2) e.flags = static_cast<uint32_t>(a[4]);
      const held_file from = held(e.path);
      e.file = from.id;
      if (ok) {
        const held_file other = held(e.path2);
        tree_.existed(e.path, nullptr, e.path2);
        if (e.flags & rename_exchange) {
          tree_.existed(e.path2, nullptr, e.path);
          hold(e.path, other);
          moved(other);
        } else if (from.id == no_id || from.type != S_IFREG) {
          tree_.moved(e.path, e.path2);  // a directory, maybe
          hold(e.path, {});
        } else {
          tree_.created(e.path2);
          hold(e.path, {});
        }
        hold(e.path2, from);
        moved(from);
      }
      if (e.result == -EEXIST && (e.flags & rename_noreplace)) tree_.existed(e.path2);
      break;
    }
    default: {  // link, linkat
      if (e.kind == op::linkat) e.flags = static_cast<uint32_t>(a[4]);
      const held_file target = held(e.path);
      e.file = target.id;
      if (ok) {
        tree_.existed(e.path);
        tree_.created(e.path2);
        hold(e.path2, target);
      }
      if (e.result == -EEXIST) tree_.existed(e.path2);
    }
  }
  emit(c);
}

}  // namespace fsrr::recorder
