// Symlinks the kernel will not follow beneath a root (absolute ones, '..' above it) are
// followed in the trace's namespace, so a replay sees what the recorded process saw, and
// never anything outside TARGET and the --map destinations.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "target.h"
#include "temp_dir.h"
#include "trace_error.h"

using namespace fsrr;

namespace {

void mkdirs(const std::string& p) {
  REQUIRE(std::system(("mkdir -p '" + p + "'").c_str()) == 0);
}
void file(const std::string& p, const std::string& text = "x") {
  std::ofstream(p) << text;
}
void link(const std::string& target, const std::string& p) {
  REQUIRE(::symlink(target.c_str(), p.c_str()) == 0);
}
ino_t ino_of(const std::string& p) {
  struct stat st;
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_ino;
}
ino_t ino_of(int fd) {
  struct stat st;
  REQUIRE(fd >= 0);
  REQUIRE(::fstat(fd, &st) == 0);
  ::close(fd);
  return st.st_ino;
}

// A Debian-like tree in TARGET: alternatives chains, the usrmerge links, an escape by '..'.
struct debian_tree {
  test::temp_dir dir{"/dev/shm"};
  std::string t = dir.path();
  debian_tree() {
    mkdirs(t + "/usr/bin");
    mkdirs(t + "/usr/lib/x86_64-linux-gnu");
    mkdirs(t + "/usr/lib64");
    mkdirs(t + "/etc/alternatives");
    file(t + "/usr/bin/xz");
    file(t + "/usr/lib/x86_64-linux-gnu/ld.so");
    link("usr/lib", t + "/lib");
    link("/etc/alternatives/lzma", t + "/usr/bin/lzma");
    link("/usr/bin/xz", t + "/etc/alternatives/lzma");
    link("/lib/x86_64-linux-gnu/ld.so", t + "/usr/lib64/ld.so");
    link("../../../../../etc", t + "/usr/bin/up");
  }
  target_root root(const std::vector<map_rule>& maps = {}, unsigned depth = 0) const {
    return or_throw(target_root::open(t, maps, depth));
  }
  int open(const target_root& r, const std::string& p, int flags = O_RDONLY) const {
    const auto at = r.locate(p);
    REQUIRE(at);
    return r.open(*at, flags, 0644);
  }
};

}  // namespace

TEST_CASE("an alternatives chain of absolute links leads to its file inside the target") {
  debian_tree d;
  const target_root r = d.root();
  CHECK(ino_of(d.open(r, "/usr/bin/lzma")) == ino_of(d.t + "/usr/bin/xz"));
  CHECK(ino_of(d.open(r, "/usr/bin/lzma", O_PATH)) == ino_of(d.t + "/usr/bin/xz"));
}

TEST_CASE("an absolute link through a relative directory link (usrmerge) is followed") {
  debian_tree d;
  const target_root r = d.root();
  CHECK(ino_of(d.open(r, "/usr/lib64/ld.so")) ==
        ino_of(d.t + "/usr/lib/x86_64-linux-gnu/ld.so"));
  // and as a directory on the way to a name
  CHECK(ino_of(d.open(r, "/lib/x86_64-linux-gnu/ld.so")) ==
        ino_of(d.t + "/usr/lib/x86_64-linux-gnu/ld.so"));
}

TEST_CASE("'..' in a link stops at the trace's root, which is the target's top") {
  debian_tree d;
  const target_root r = d.root();
  CHECK(ino_of(d.open(r, "/usr/bin/up", O_RDONLY | O_DIRECTORY)) == ino_of(d.t + "/etc"));
}

TEST_CASE("a link that is not followed stays the link") {
  debian_tree d;
  const target_root r = d.root();
  CHECK(ino_of(d.open(r, "/usr/bin/lzma", O_PATH | O_NOFOLLOW)) == ino_of(d.t + "/usr/bin/lzma"));
  CHECK(d.open(r, "/usr/bin/lzma", O_RDONLY | O_NOFOLLOW) == -ELOOP);
  // O_CREAT | O_EXCL fails on the link itself, as the kernel has it
  CHECK(d.open(r, "/usr/bin/lzma", O_WRONLY | O_CREAT | O_EXCL) == -EEXIST);
}

TEST_CASE("a link to /etc/passwd reaches the target's /etc/passwd, never the host's") {
  debian_tree d;
  link("/etc/passwd", d.t + "/usr/bin/pw");
  link("/etc/shadow-dir/x", d.t + "/usr/bin/deep");
  struct stat host_before, host_after;
  REQUIRE(::stat("/etc/passwd", &host_before) == 0);
  const target_root r = d.root();
  CHECK(d.open(r, "/usr/bin/pw") == -ENOENT);  // the target has none
  const int fd = d.open(r, "/usr/bin/pw", O_WRONLY | O_CREAT | O_TRUNC);
  CHECK(ino_of(fd) == ino_of(d.t + "/etc/passwd"));
  CHECK(d.open(r, "/usr/bin/deep", O_WRONLY | O_CREAT) == -ENOENT);
  REQUIRE(::stat("/etc/passwd", &host_after) == 0);
  CHECK(host_after.st_size == host_before.st_size);
  CHECK(host_after.st_mtim.tv_nsec == host_before.st_mtim.tv_nsec);
  CHECK(host_after.st_mtim.tv_sec == host_before.st_mtim.tv_sec);
}

TEST_CASE("an absolute link into a --map prefix leads into its destination") {
  debian_tree d;
  test::temp_dir mapped("/dev/shm");
  file(mapped / "f");
  link("/data/f", d.t + "/usr/bin/to-data");
  const target_root r = d.root({or_throw(parse_map("/data=" + mapped.path()))});
  CHECK(ino_of(d.open(r, "/usr/bin/to-data")) == ino_of(mapped / "f"));
}

TEST_CASE("links that lead to each other end in ELOOP") {
  debian_tree d;
  link("/usr/bin/b", d.t + "/usr/bin/a");
  link("/usr/bin/a", d.t + "/usr/bin/b");
  const target_root r = d.root();
  CHECK(d.open(r, "/usr/bin/a") == -ELOOP);
}

TEST_CASE("in a trace of several roots, an absolute link starts at its own root's top") {
  debian_tree d;
  mkdirs(d.t + "/root2/etc");
  mkdirs(d.t + "/root2/bin");
  file(d.t + "/root2/etc/conf");
  link("/etc/conf", d.t + "/root2/bin/conf");
  link("../../../etc", d.t + "/root2/bin/up");
  const target_root r = d.root({}, 1);
  CHECK(ino_of(d.open(r, "/root2/bin/conf")) == ino_of(d.t + "/root2/etc/conf"));
  CHECK(ino_of(d.open(r, "/root2/bin/up", O_RDONLY | O_DIRECTORY)) == ino_of(d.t + "/root2/etc"));
}
