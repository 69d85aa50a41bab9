#include "bind_root.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fsrr::test {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

void make_dirs(const std::string& p) {
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  if (ec) throw std::runtime_error("mkdir -p " + p + ": " + ec.message());
}

}  // namespace

void private_mounts() {
  static bool done = false;
  if (done) return;
  if (::unshare(CLONE_NEWNS) != 0) fail("unshare(CLONE_NEWNS)");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail("mount --make-rprivate /");
  done = true;
}

bind_root::bind_root(const std::string& dir, const std::vector<std::string>& also) : dir_(dir) {
  private_mounts();
  try {
    bind("/usr", dir_ + "/usr", false, true);
    bind("/etc", dir_ + "/etc", false, true);
    bind("/dev", dir_ + "/dev", true, false);  // with /dev/shm, where temp dirs live
    bind("/sys", dir_ + "/sys", true, false);  // the kernel's BTF, for fsrr inside
    make_dirs(dir_ + "/proc");
    if (::mount("proc", (dir_ + "/proc").c_str(), "proc", 0, nullptr) != 0) fail("mount proc");
    mounts_.push_back(dir_ + "/proc");
    for (const char* top : {"bin", "sbin", "lib", "lib32", "lib64", "libx32"}) {
      struct stat st;
      const std::string host = std::string("/") + top;
      if (::lstat(host.c_str(), &st) != 0) continue;
      if (S_ISLNK(st.st_mode)) {  // merged /usr: bin -> usr/bin
        char target[256];
        const ssize_t n = ::readlink(host.c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (::symlink(target, (dir_ + host).c_str()) != 0) fail("symlink " + host);
      } else {
        bind(host, dir_ + host, false, true);
      }
    }
    make_dirs(dir_ + "/data");
    make_dirs(dir_ + "/tmp");
    ::chmod((dir_ + "/tmp").c_str(), 01777);
    for (const std::string& a : also) bind(a, dir_ + a, false, false);
  } catch (...) {
    this->~bind_root();
    throw;
  }
}

bind_root::~bind_root() {
  for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
  mounts_.clear();
}

void bind_root::bind(const std::string& from, const std::string& at, bool recursive,
                     bool read_only) {
  make_dirs(at);
  if (::mount(from.c_str(), at.c_str(), nullptr, MS_BIND | (recursive ? MS_REC : 0), nullptr) != 0)
    fail("mount --bind " + from + " " + at);
  mounts_.push_back(at);
  if (read_only &&
      ::mount(nullptr, at.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0)
    fail("mount -o remount,ro " + at);
}

}  // namespace fsrr::test
