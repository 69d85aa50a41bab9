// The *xattrat calls (Linux 6.13) and file_getattr/file_setattr (6.17) replayed: on names from
// a directory fd, on a symlink not followed, on an fd (AT_EMPTY_PATH), and never outside.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <catch2/catch.hpp>

#include "replay_fixture.h"
#include "trace_builder.h"

using namespace fsrr;
using namespace fsrr::test;

namespace {

constexpr long nr_file_getattr = 468;
constexpr uint32_t fs_xflag_nodump = 0x80;

struct file_attr {
  uint64_t xflags;
  uint32_t extsize, nextents, projid, cowextsize;
};

// The value size of `name` on `path` (not following a final symlink); -errno if none.
long xattr_size(const std::string& path, const char* name) {
  const ssize_t n = ::lgetxattr(path.c_str(), name, nullptr, 0);
  return n < 0 ? -errno : n;
}

uint64_t xflags(const std::string& path) {
  file_attr fa{};
  REQUIRE(::syscall(nr_file_getattr, AT_FDCWD, path.c_str(), &fa, sizeof fa, 0) == 0);
  return fa.xflags;
}

// /d/x.txt (100 bytes) in the tree, /d/x.link -> x.txt made by the workload, x.txt open as fd 3.
struct workload {
  trace_builder b;
  thread_id t;
  file_id file;
  path_id x, link;

  explicit workload(const std::string& path)
      : b(path),
        t(b.thread(1, 1, 1)),
        file(b.file(5)),
        x(b.path("/d/x.txt")),
        link(b.path("/d/x.link")) {
    b.tree_dir("/d");
    b.tree_file("/d/x.txt", 100);
    event& l = b.next(t, op::symlink);
    l.path = link;
    l.aux = b.str("x.txt");
    event& o = b.next(t, op::openat, 3);
    o.path = x;
    o.file = file;
    o.flags = O_RDONLY;
  }
  // An op on /d/x.txt by name (fd -1), or on fd 3 with AT_EMPTY_PATH.
  event& on_name(op kind, int64_t result, path_id p, uint32_t flags = 0) {
    event& e = b.next(t, kind, result);
    e.path = p;
    e.flags = flags;
    return e;
  }
  event& on_fd(op kind, int64_t result) {
    event& e = on_name(kind, result, x, AT_EMPTY_PATH);
    e.fd = 3;
    e.file = file;
    return e;
  }
};

}  // namespace

TEST_CASE("the *xattrat calls replay on the target's file by name, on an fd and on a symlink") {
  replay_fixture f;
  {
    workload w(f.trace);
    event& set = w.on_name(op::setxattrat, 0, w.x, XATTR_CREATE);
    set.aux = w.b.str("user.a");
    set.size = 5;
    event& by_fd = w.on_fd(op::setxattrat, 0);
    by_fd.aux = w.b.str("user.b");
    by_fd.size = 300;
    event& tmp = w.on_fd(op::setxattrat, 0);
    tmp.aux = w.b.str("user.tmp");
    tmp.size = 1;
    w.on_fd(op::removexattrat, 0).aux = w.b.str("user.tmp");
    event& get = w.on_name(op::getxattrat, 5, w.link);  // follows the link
    get.aux = w.b.str("user.a");
    get.size = 64;
    w.on_name(op::listxattrat, 14, w.x).size = 100;  // "user.a\0user.b\0"
    event& on_link = w.on_name(op::setxattrat, -EPERM, w.link, AT_SYMLINK_NOFOLLOW | XATTR_CREATE);
    on_link.aux = w.b.str("user.c");  // user.* is refused on a symlink itself
    on_link.size = 4;
    w.on_name(op::removexattrat, -ENODATA, w.x).aux = w.b.str("user.none");
    event& again = w.on_name(op::setxattrat, -EEXIST, w.x, XATTR_CREATE);
    again.aux = w.b.str("user.a");
    again.size = 5;
    event& acl = w.on_name(op::setxattrat, 0, w.x);
    acl.aux = w.b.str("system.posix_acl_access");
    acl.size = 28;
    acl.mode = acl_mode_present | 0640;
    w.b.next(w.t, op::close).fd = 3;
    w.b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::setxattrat) == 6);
  CHECK(count(s, op::getxattrat) == 1);
  CHECK(count(s, op::listxattrat) == 1);
  CHECK(count(s, op::removexattrat) == 2);
  const std::string x = f.target + "/d/x.txt";
  CHECK(xattr_size(x, "user.a") == 5);
  CHECK(xattr_size(x, "user.b") == 300);
  CHECK(xattr_size(x, "user.tmp") == -ENODATA);
  CHECK(xattr_size(f.target + "/d/x.link", "user.c") == -ENODATA);
  CHECK((f.mode("d/x.txt") & 07777) == 0640);  // the ACL's permission bits
}

TEST_CASE("file_setattr replays the recorded xflags, and file_getattr's results compare") {
  replay_fixture f;
  {
    workload w(f.trace);
    w.on_name(op::file_getattr, 0, w.x).size = 24;
    event& set = w.on_name(op::file_setattr, 0, w.x);
    set.size = 24;
    set.aux = fs_xflag_nodump;
    w.on_fd(op::file_getattr, 0).size = 24;
    // tmpfs has no attributes for a symlink: a result to compare like any other
    w.on_name(op::file_getattr, -EOPNOTSUPP, w.link, AT_SYMLINK_NOFOLLOW).size = 24;
    w.on_name(op::file_getattr, -EINVAL, w.x).size = 8;  // shorter than any struct file_attr
    w.b.next(w.t, op::close).fd = 3;
    w.b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 0);
  CHECK(count(s, op::file_getattr) == 4);
  CHECK(count(s, op::file_setattr) == 1);
  CHECK(xflags(f.target + "/d/x.txt") == fs_xflag_nodump);
}

TEST_CASE(
    "*xattrat and file_setattr through a symlink that leads out of the target change "
    "nothing outside") {
  replay_fixture f;
  const std::string victim = f.dir / "victim";
  std::fclose(std::fopen(victim.c_str(), "w"));
  {
    workload w(f.trace);
    event& out = w.b.next(w.t, op::symlink);
    out.path = w.b.path("/d/out");
    out.aux = w.b.str(victim);
    event& set = w.on_name(op::setxattrat, 0, out.path);
    set.aux = w.b.str("user.evil");
    set.size = 5;
    event& fset = w.on_name(op::file_setattr, 0, out.path);
    fset.size = 24;
    fset.aux = fs_xflag_nodump;
    event& dots = w.on_name(op::setxattrat, 0, w.b.path("/../victim"), AT_SYMLINK_NOFOLLOW);
    dots.aux = w.b.str("user.evil");
    dots.size = 5;
    w.b.finish();
  }
  const replay_stats s = f.replay();
  CHECK(s.mismatches == 3);
  CHECK(xattr_size(victim, "user.evil") == -ENODATA);
  CHECK(xflags(victim) == 0);
}
