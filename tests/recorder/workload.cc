// fsrr_workload MODE DIR: issues known file-system operations so that the recorder tests can
// assert on exactly what a trace holds. Raw syscall() is used wherever the test expects a
// particular syscall (glibc would pick the *at variant). Exits non-zero if an operation
// did not behave as the tests assume.
#include <fcntl.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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

long sys(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  return ::syscall(nr, a, b, c, d, e);
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
  long r;
  asm volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");  // ia32 getpid
  check(r == ::getpid(), "int 0x80");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: fsrr_workload ops|child|hold|restart|loop SECONDS|invisible|burst DIR\n");
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
  else
    return 2;
  return 0;
}
