// fsrr_workload MODE DIR: issues known file-system operations so that the recorder tests can
// assert on exactly what a trace holds. Raw syscall() is used wherever the test expects a
// particular syscall (glibc would pick the *at variant). Exits non-zero if an operation
// did not behave as the tests assume.
#include <fcntl.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

std::string self;
char buf[4096];

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fsrr_workload: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

void check(bool ok, const char* what) {
  if (!ok) die(what);
}

long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  return ::syscall(nr, a, b, c, d, e, f);
}

// The operations the "known operations" test asserts on, in this order.
void ops() {
  std::memset(buf, 'x', sizeof buf);
  // relative names, write / pwrite / writev / lseek / dup2
  int fd = ::open("a.txt", O_CREAT | O_WRONLY | O_TRUNC, 0640);
  check(fd >= 0, "open a.txt");
  check(::write(fd, buf, 100) == 100, "write");
  check(::pwrite(fd, buf, 10, 200) == 10, "pwrite");
  iovec wv[2] = {{buf, 5}, {buf, 7}};
  check(::writev(fd, wv, 2) == 12, "writev");
  check(::lseek(fd, 0, SEEK_SET) == 0, "lseek");
  check(::dup2(fd, 10) == 10, "dup2");
  check(::write(10, buf, 3) == 3, "write 10");
  ::close(10);
  ::close(fd);

  // a dirfd
  check(sys(SYS_mkdir, (long)"sub", 0750) == 0, "mkdir");
  const int dfd = ::open("sub", O_RDONLY | O_DIRECTORY);
  check(dfd >= 0, "open sub");
  fd = ::openat(dfd, "b.txt", O_CREAT | O_RDWR, 0600);
  check(fd >= 0, "openat b.txt");
  check(::write(fd, buf, 50) == 50, "write b");
  check(::pread(fd, buf, 20, 10) == 20, "pread");
  check(::lseek(fd, 5, SEEK_SET) == 5, "lseek b");
  iovec rv[2] = {{buf, 4}, {buf + 4, 6}};
  check(::readv(fd, rv, 2) == 10, "readv");
  ::close(fd);

  // symlinks: the kernel resolves link/b.txt to sub/b.txt
  check(sys(SYS_symlink, (long)"sub", (long)"link") == 0, "symlink");
  fd = static_cast<int>(sys(SYS_open, (long)"link/b.txt", O_RDONLY));
  check(fd >= 0, "open link/b.txt");
  check(::read(fd, buf, 7) == 7, "read b");
  ::close(fd);
  struct stat st;
  check(sys(SYS_stat, (long)"link/b.txt", (long)&st) == 0, "stat");
  check(sys(SYS_lstat, (long)"link", (long)&st) == 0, "lstat");

  // renames
  check(sys(SYS_rename, (long)"a.txt", (long)"c.txt") == 0, "rename");
  check(sys(SYS_renameat, dfd, (long)"b.txt", AT_FDCWD, (long)"d.txt") == 0, "renameat");
  ::close(dfd);

  // O_APPEND on a file that existed before (pre.txt, 1000 bytes)
  fd = ::open("pre.txt", O_WRONLY | O_APPEND);
  check(fd >= 0, "open pre.txt");
  check(::write(fd, buf, 10) == 10, "append 10");
  check(::write(fd, buf, 20) == 20, "append 20");
  ::close(fd);

  // copy_file_range, with and without an offset pointer
  const int in = ::open("c.txt", O_RDONLY);
  const int out = ::open("copy.txt", O_CREAT | O_WRONLY, 0644);
  check(in >= 0 && out >= 0, "open copy");
  loff_t off_out = 50;
  check(::copy_file_range(in, nullptr, out, &off_out, 100, 0) == 100, "copy_file_range 1");
  check(::copy_file_range(in, nullptr, out, nullptr, 60, 0) == 60, "copy_file_range 2");
  ::close(in);
  ::close(out);

  // two threads, one file each
  auto worker = [](int i) {
    const std::string name = "t" + std::to_string(i) + ".txt";
    const int f = ::open(name.c_str(), O_CREAT | O_WRONLY, 0644);
    check(f >= 0, "open t");
    check(::pwrite(f, buf, 64, 4096 * i) == 64, "pwrite t");
    ::close(f);
  };
  std::thread t1(worker, 1), t2(worker, 2);
  t1.join();
  t2.join();

  // fork, then exec in the child
  const pid_t child = ::fork();
  check(child >= 0, "fork");
  if (child == 0) {
    const int f = ::open("child.txt", O_CREAT | O_WRONLY, 0644);
    if (f < 0 || ::write(f, buf, 7) != 7) ::_exit(3);
    ::close(f);
    ::execl(self.c_str(), self.c_str(), "child", ".", nullptr);
    ::_exit(4);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child");

  check(sys(SYS_unlink, (long)"c.txt") == 0, "unlink");
}

// After exec: one write to exec.txt.
void child_after_exec() {
  std::memset(buf, 'y', 9);
  const int f = ::open("exec.txt", O_CREAT | O_WRONLY, 0644);
  check(f >= 0 && ::write(f, buf, 9) == 9, "exec.txt");
  ::close(f);
}

// --pid: opens held.txt and reads 3 bytes before the recorder attaches, says "ready",
// waits for a line on stdin, then reads 5 more bytes and copies them to out.txt.
void hold() {
  const int f = ::open("held.txt", O_RDONLY);
  check(f >= 0 && ::read(f, buf, 3) == 3, "held.txt");
  std::printf("ready\n");
  std::fflush(stdout);
  char line[16];
  check(std::fgets(line, sizeof line, stdin) != nullptr, "stdin");
  check(::read(f, buf, 5) == 5, "read held");
  const int o = ::open("out.txt", O_CREAT | O_WRONLY, 0644);
  check(o >= 0 && ::write(o, buf, 5) == 5, "out.txt");
  ::close(o);
  ::close(f);
}

void on_signal(int) {}

// A flock that a signal interrupts and SA_RESTART restarts: the first attempt exits with
// -ERESTARTSYS, the second succeeds.
void restart() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &sa, nullptr);
  const int f = ::open("lock", O_CREAT | O_RDWR, 0644);
  check(f >= 0, "open lock");
  int ready[2];
  check(::pipe(ready) == 0, "pipe");
  const pid_t parent = ::getpid();
  const pid_t holder = ::fork();
  if (holder == 0) {
    const int g = ::open("lock", O_RDWR);
    ::flock(g, LOCK_EX);
    (void)!::write(ready[1], "x", 1);
    ::usleep(200000);
    ::kill(parent, SIGUSR1);
    ::usleep(200000);
    ::_exit(0);  // releases the lock
  }
  char c;
  check(::read(ready[0], &c, 1) == 1, "ready");
  check(::flock(f, LOCK_EX) == 0, "flock");
  ::waitpid(holder, nullptr, 0);
}

// Writes a line to loop.txt every 20 ms for `seconds`.
void loop(int seconds) {
  const int f = ::open("loop.txt", O_CREAT | O_WRONLY | O_APPEND, 0644);
  check(f >= 0, "open loop.txt");
  for (int i = 0; i < seconds * 50; ++i) {
    check(::write(f, "line\n", 5) == 5, "write loop");
    ::usleep(20000);
  }
  ::close(f);
}

// More than a tiny ring buffer can take: one record larger than it (a 3 KiB name, walked
// to a 3 KiB path), then a burst of small ones.
void burst() {
  const std::string level(240, 'd');
  std::string rel;
  for (int i = 0; i < 14; ++i) {
    rel += (i ? "/" : "") + level;
    check(::mkdir(rel.c_str(), 0755) == 0, "mkdir level");
  }
  rel += "/f";
  const int f = ::open(rel.c_str(), O_CREAT | O_RDWR, 0644);
  check(f >= 0 && ::write(f, "x", 1) == 1, "deep file");
  for (int i = 0; i < 20000; ++i) check(::pread(f, buf, 1, 0) == 1, "pread");
  ::close(f);
}

// What syscall tracing cannot see, and a 32-bit call.
void invisible() {
  io_uring_params p{};
  const long ring = sys(SYS_io_uring_setup, 4, (long)&p);
  if (ring >= 0) ::close(static_cast<int>(ring));
  const int f = ::open("mm.dat", O_CREAT | O_RDWR, 0644);
  check(f >= 0 && ::ftruncate(f, 4096) == 0, "mm.dat");
  void* m = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  check(m != MAP_FAILED, "mmap");
  static_cast<char*>(m)[0] = 1;
  ::munmap(m, 4096);
  ::close(f);
  // Kernels without IA-32 emulation (ia32_emulation=0, or a host that runs no 32-bit code)
  // answer int 0x80 with SIGSEGV: try it in a child first, and say which it was.
  const pid_t probe = ::fork();
  check(probe >= 0, "fork");
  if (probe == 0) {
    long r;
    asm volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");  // ia32 getpid
    ::_exit(r == ::getpid() ? 0 : 1);
  }
  int status = 0;
  check(::waitpid(probe, &status, 0) == probe, "waitpid");
  const bool ia32 = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  check(ia32 || (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV), "int 0x80 probe");
  if (!ia32) {
    const int note = ::open("no-ia32", O_CREAT | O_WRONLY, 0644);
    check(note >= 0, "no-ia32");
    ::close(note);
  }
}

// Files that are not storage: procfs and sysfs by fd and by name, a device node, a pipe.
void pseudo() {
  int f = ::open("/proc/self/stat", O_RDONLY);
  check(f >= 0 && ::read(f, buf, sizeof buf) > 0, "/proc/self/stat");
  ::close(f);
  struct stat st;
  check(::stat("/proc/self/status", &st) == 0, "stat /proc");
  check(::access("/sys/kernel", F_OK) == 0, "access /sys");
  f = ::open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY);  // may not exist
  if (f >= 0) ::close(f);
  check(::stat("/dev/null", &st) == 0, "stat /dev/null");
  f = ::open("/dev/null", O_WRONLY);
  check(f >= 0 && ::write(f, buf, 10) == 10, "/dev/null");
  ::close(f);
  int p[2];
  check(::pipe(p) == 0 && ::write(p[1], buf, 5) == 5 && ::read(p[0], buf, 5) == 5, "pipe");
  ::close(p[0]);
  ::close(p[1]);
  f = ::open("real.txt", O_CREAT | O_WRONLY, 0644);  // and one storage file
  check(f >= 0 && ::write(f, buf, 4) == 4, "real.txt");
  ::close(f);
}

// POSIX ACLs as cp -a and rsync -A set them, and an ordinary xattr.
void acl() {
  const auto entry = [](uint16_t tag, uint16_t perm, uint32_t id) {
    return std::string(reinterpret_cast<const char*>(&tag), 2) +
           std::string(reinterpret_cast<const char*>(&perm), 2) +
           std::string(reinterpret_cast<const char*>(&id), 4);
  };
  const uint32_t version = 2, none = 0xffffffff;
  const std::string header(reinterpret_cast<const char*>(&version), 4);
  // owner rw-, group r--, other ---
  const std::string plain =
      header + entry(0x01, 6, none) + entry(0x04, 4, none) + entry(0x20, 0, none);
  // owner rwx, user 1000 r--, group r-x, mask r--, other --x: the mask is the group's bits
  const std::string masked = header + entry(0x01, 7, none) + entry(0x02, 4, 1000) +
                             entry(0x04, 5, none) + entry(0x10, 4, none) + entry(0x20, 1, none);
  const int f = ::open("acl.txt", O_CREAT | O_WRONLY, 0666);
  check(f >= 0, "acl.txt");
  check(::fsetxattr(f, "system.posix_acl_access", plain.data(), plain.size(), 0) == 0,
        "fsetxattr acl");
  check(::setxattr("acl.txt", "system.posix_acl_access", masked.data(), masked.size(), 0) == 0,
        "setxattr acl");
  check(::fsetxattr(f, "user.note", "hello", 5, 0) == 0, "fsetxattr user");
  ::close(f);
  check(::mkdir("acl.d", 0755) == 0, "acl.d");
  check(::lsetxattr("acl.d", "system.posix_acl_default", plain.data(), plain.size(), 0) == 0,
        "lsetxattr default");
}

// The *xattrat calls (Linux 6.13) and file_getattr/file_setattr (6.17), on names relative to a
// directory fd, on a symlink not followed, and on an fd (AT_EMPTY_PATH).
void xattrat() {
  constexpr long nr_setxattrat = 463, nr_getxattrat = 464, nr_listxattrat = 465,
                 nr_removexattrat = 466, nr_file_getattr = 468, nr_file_setattr = 469;
  struct xattr_args {
    uint64_t value;
    uint32_t size;
    uint32_t flags;
  };
  struct file_attr {
    uint64_t xflags;
    uint32_t extsize, nextents, projid, cowextsize;
  };
  check(::mkdir("sub", 0755) == 0, "sub");
  const int f = ::open("sub/x.txt", O_CREAT | O_RDWR, 0644);
  check(f >= 0 && ::symlink("x.txt", "sub/x.link") == 0, "x.txt, x.link");
  const int d = ::open("sub", O_RDONLY | O_DIRECTORY);
  check(d >= 0, "open sub");
  const auto arg = [](const void* p) { return reinterpret_cast<long>(p); };
  xattr_args set{reinterpret_cast<uint64_t>("hello"), 5, XATTR_CREATE};
  check(sys(nr_setxattrat, d, arg("x.txt"), 0, arg("user.a"), arg(&set), sizeof set) == 0,
        "setxattrat");
  xattr_args get{reinterpret_cast<uint64_t>(buf), 64, 0};
  check(sys(nr_getxattrat, d, arg("x.link"), 0, arg("user.a"), arg(&get), sizeof get) == 5,
        "getxattrat through the link");
  check(sys(nr_listxattrat, d, arg("x.txt"), 0, arg(buf), 100) == 7, "listxattrat");
  // user.* xattrs are refused on a symlink itself
  check(sys(nr_setxattrat, d, arg("x.link"), AT_SYMLINK_NOFOLLOW, arg("user.b"), arg(&set),
            sizeof set) == -1 &&
            errno == EPERM,
        "setxattrat on the link");
  xattr_args three{reinterpret_cast<uint64_t>("abc"), 3, 0};
  check(
      sys(nr_setxattrat, f, arg(""), AT_EMPTY_PATH, arg("user.c"), arg(&three), sizeof three) == 0,
      "setxattrat AT_EMPTY_PATH");
  check(sys(nr_removexattrat, f, arg(""), AT_EMPTY_PATH, arg("user.c")) == 0,
        "removexattrat AT_EMPTY_PATH");
  check(sys(nr_removexattrat, d, arg("x.txt"), 0, arg("user.none")) == -1 && errno == ENODATA,
        "removexattrat missing");
  // owner rw-, group r--, other ---
  const uint32_t acl[7] = {2,          0x01 | 6u << 16, 0xffffffff, 0x04 | 4u << 16,
                           0xffffffff, 0x20 | 0u << 16, 0xffffffff};
  xattr_args acl_args{reinterpret_cast<uint64_t>(acl), sizeof acl, 0};
  check(sys(nr_setxattrat, d, arg("x.txt"), 0, arg("system.posix_acl_access"), arg(&acl_args),
            sizeof acl_args) == 0,
        "setxattrat acl");
  file_attr fa{};
  check(sys(nr_file_getattr, d, arg("x.txt"), arg(&fa), sizeof fa, 0) == 0, "file_getattr");
  fa.xflags = 0x80;  // FS_XFLAG_NODUMP
  check(sys(nr_file_setattr, d, arg("x.txt"), arg(&fa), sizeof fa, 0) == 0, "file_setattr");
  check(sys(nr_file_getattr, d, arg("x.link"), arg(&fa), sizeof fa, AT_SYMLINK_NOFOLLOW) == -1 &&
            errno == EOPNOTSUPP,
        "file_getattr on the link");
  check(sys(nr_file_getattr, f, arg(""), arg(&fa), sizeof fa, AT_EMPTY_PATH) == 0 &&
            fa.xflags == 0x80,
        "file_getattr AT_EMPTY_PATH");
  ::close(d);
  ::close(f);
}

// sendfile, splice and copy_file_range, each with an offset pointer and with NULL.
void copies() {
  const int in = ::open("in.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
  const int out = ::open("out.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  check(in >= 0 && out >= 0 && ::write(in, buf, 1000) == 1000, "in.dat");
  check(::lseek(in, 100, SEEK_SET) == 100, "lseek in");
  off_t off = 300;
  check(::sendfile(out, in, &off, 40) == 40, "sendfile offset");
  check(::sendfile(out, in, nullptr, 30) == 30, "sendfile NULL");
  int p[2];
  check(::pipe(p) == 0, "pipe");
  loff_t loff = 500;
  check(::splice(in, &loff, p[1], nullptr, 20, 0) == 20, "splice offset");
  check(::splice(p[0], nullptr, out, nullptr, 20, 0) == 20, "splice NULL");
  loff_t a = 10, b = 700;
  check(::copy_file_range(in, &a, out, &b, 50, 0) == 50, "copy_file_range offsets");
  check(::copy_file_range(in, nullptr, out, nullptr, 60, 0) == 60, "copy_file_range NULL");
  ::close(p[0]);
  ::close(p[1]);
  ::close(in);
  ::close(out);
}

// Creates 6,000 empty files with names of 2 to 203 bytes, "n<i>x...x": records of many sizes,
// so that some cross the end of a small ring buffer.
void names() {
  for (int i = 0; i < 6000; ++i) {
    const std::string name = "n" + std::to_string(i) + std::string(i % 199, 'x');
    const int f = ::open(name.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    check(f >= 0, "names open");
    ::close(f);
  }
}

// Creates, writes and unlinks the same four names over and over for `seconds`: hours of a
// busy workload's bookkeeping, compressed.
void churn(int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  const char* names[] = {"c0", "c1", "c2", "c3"};
  while (std::chrono::steady_clock::now() < end) {
    for (const char* n : names) {
      const int f = ::open(n, O_CREAT | O_WRONLY | O_TRUNC, 0644);
      check(f >= 0 && ::write(f, buf, 100) == 100, "churn write");
      ::close(f);
      check(::unlink(n) == 0, "churn unlink");
    }
  }
}

// What one call of each kind costs, in ns (run natively and under `fsrr record` by
// bench/record_syscall_cost.sh): `rounds` loops of 20,000 calls each, best round kept.
void cost(int rounds) {
  const int f = ::open("cost.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
  check(f >= 0 && ::write(f, buf, 4096) == 4096, "cost.dat");
  const int g = ::open("cost2.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
  check(g >= 0, "cost2.dat");
  struct stat st;
  auto measure = [&](const char* name, int per_iter, auto&& body) {
    constexpr int n = 20000;
    double best = 1e30;
    for (int r = 0; r < rounds; ++r) {
      const auto a = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) body(i);
      const auto b = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::nano>(b - a).count() / n);
    }
    std::printf("%-18s %8.0f ns/call\n", name, best / per_iter);
  };
  measure("getppid", 1, [](int) { sys(SYS_getppid); });
  measure("pread64", 1, [&](int) { check(::pread(f, buf, 1, 0) == 1, "pread"); });
  measure("read+lseek", 2, [&](int) {
    ::lseek(f, 0, SEEK_SET);
    check(::read(f, buf, 1) == 1, "read");
  });
  measure("pwrite64", 1, [&](int i) { check(::pwrite(g, buf, 1, i % 4096) == 1, "pwrite"); });
  measure("fstat", 1, [&](int) { check(::fstat(f, &st) == 0, "fstat"); });
  measure("newfstatat", 1, [&](int) { check(::stat("cost.dat", &st) == 0, "stat"); });
  measure("openat+close", 2, [&](int) {
    const int h = ::open("cost.dat", O_RDONLY);
    check(h >= 0, "open");
    ::close(h);
  });
  measure("copy_file_range", 1, [&](int) {
    loff_t in = 0, out = 0;
    check(::copy_file_range(f, &in, g, &out, 16, 0) == 16, "copy_file_range");
  });
  measure("fgetxattr", 1, [&](int) { ::fgetxattr(f, "user.none", buf, sizeof buf); });
  ::close(f);
  ::close(g);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(
        stderr,
        "usage: fsrr_workload ops|child|hold|restart|loop "
        "SECONDS|invisible|burst|pseudo|acl|copies|xattrat|names|churn SECONDS|cost ROUNDS "
        "DIR\n");
    return 2;
  }
  self = argv[0];
  if (self.find('/') == std::string::npos || self[0] != '/') {
    char real[4096];
    check(::realpath(argv[0], real) != nullptr, "realpath");
    self = real;
  }
  const std::string mode = argv[1];
  const char* dir = argv[argc - 1];
  check(::chdir(dir) == 0, "chdir");
  if (mode == "ops")
    ops();
  else if (mode == "child")
    child_after_exec();
  else if (mode == "hold")
    hold();
  else if (mode == "restart")
    restart();
  else if (mode == "loop" && argc == 4)
    loop(std::atoi(argv[2]));
  else if (mode == "invisible")
    invisible();
  else if (mode == "burst")
    burst();
  else if (mode == "pseudo")
    pseudo();
  else if (mode == "acl")
    acl();
  else if (mode == "copies")
    copies();
  else if (mode == "xattrat")
    xattrat();
  else if (mode == "names")
    names();
  else if (mode == "churn" && argc == 4)
    churn(std::atoi(argv[2]));
  else if (mode == "cost" && argc == 4)
    cost(std::atoi(argv[2]));
  else
    return 2;
  return 0;
}
