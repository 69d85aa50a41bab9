#define FUSE_USE_VERSION 31
#include "block_log.h"

#include <fcntl.h>
#include <fuse3/fuse.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "command.h"

namespace fsrr::lab {
namespace {

constexpr const char* disk_name = "/disk";

// What the child serves, reached from FUSE's callbacks through the context's private data.
struct served {
  int image = -1, index = -1, data = -1;
  uint64_t size = 0, data_end = 0;
  std::atomic<uint64_t>* count = nullptr;
};

served& me() { return *static_cast<served*>(fuse_get_context()->private_data); }

bool write_all(int fd, const void* buf, size_t n, off_t at) {
  const auto* p = static_cast<const char*>(buf);
  while (n) {
    const ssize_t w = ::pwrite(fd, p, n, at);
    if (w <= 0) return false;
    p += w, n -= static_cast<size_t>(w), at += w;
  }
  return true;
}

// The record goes to the index after its bytes are in the data file, and is counted after
// that: a count read from the parent never covers a record half written.
int log_record(served& s, const block_record& r) {
  if (::write(s.index, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) return -EIO;
  s.count->fetch_add(1, std::memory_order_release);
  return 0;
}

void* on_init(fuse_conn_info* conn, fuse_config* cfg) {
  // Every write the loop device makes reaches the child at once, in order, as it is made.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  cfg->direct_io = 0;
  cfg->kernel_cache = 1;  // reads may come from the cache: the child changes nothing itself
  return fuse_get_context()->private_data;
}

int on_getattr(const char* path, struct stat* st, fuse_file_info*) {
  std::memset(st, 0, sizeof *st);
  if (std::strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0700;
    st->st_nlink = 2;
    return 0;
  }
  if (std::strcmp(path, disk_name) != 0) return -ENOENT;
  st->st_mode = S_IFREG | 0600;
  st->st_nlink = 1;
  st->st_size = static_cast<off_t>(me().size);
  return 0;
}

int on_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*,
               fuse_readdir_flags) {
  if (std::strcmp(path, "/") != 0) return -ENOENT;
  fill(buf, ".", nullptr, 0, fuse_fill_dir_flags{});
  fill(buf, "..", nullptr, 0, fuse_fill_dir_flags{});
  fill(buf, disk_name + 1, nullptr, 0, fuse_fill_dir_flags{});
  return 0;
}

int on_open(const char* path, fuse_file_info*) {
  return std::strcmp(path, disk_name) == 0 ? 0 : -ENOENT;
}

int on_read(const char*, char* buf, size_t n, off_t at, fuse_file_info*) {
  served& s = me();
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(s.image, buf + done, n - done, at + static_cast<off_t>(done));
    if (r < 0) return -errno;
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<int>(done);
}

int on_write(const char*, const char* buf, size_t n, off_t at, fuse_file_info*) {
  served& s = me();
  if (at < 0 || static_cast<uint64_t>(at) + n > s.size) return -ENOSPC;
  if (!write_all(s.data, buf, n, static_cast<off_t>(s.data_end)) ||
      !write_all(s.image, buf, n, at))
    return -EIO;
  const block_record r{static_cast<uint64_t>(at), s.data_end, static_cast<uint32_t>(n), 0};
  s.data_end += n;
  if (const int err = log_record(s, r)) return err;
  return static_cast<int>(n);
}

int on_fsync(const char*, int, fuse_file_info*) { return log_record(me(), block_record{0, 0, 0, 1}); }

[[noreturn]] void serve(served& s, const std::string& mount_point, int ready, pid_t parent) {
  // Its own session: a Ctrl-C meant for fsrr must not end the server under a mounted file
  // system; fsrr ends it once the loop device has let go. Gone with fsrr, whatever happens.
  ::setsid();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(1);
  fuse_operations ops{};
  ops.init = on_init;
  ops.getattr = on_getattr;
  ops.readdir = on_readdir;
  ops.open = on_open;
  ops.read = on_read;
  ops.write = on_write;
  ops.fsync = on_fsync;
  const char* argv[] = {"fsrr-block-log", "-o", "allow_other,fsname=fsrr-block-log", nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, const_cast<char**>(argv));
  fuse* f = fuse_new(&args, &ops, sizeof ops, &s);
  char ok = f && fuse_mount(f, mount_point.c_str()) == 0 ? 1 : 0;
  if (::write(ready, &ok, 1) != 1 || !ok) ::_exit(1);
  ::close(ready);
  fuse_set_signal_handlers(fuse_get_session(f));  // SIGTERM (fsrr gone): unmount and end
  const int status = fuse_loop(f);
  fuse_remove_signal_handlers(fuse_get_session(f));
  fuse_unmount(f);
  fuse_destroy(f);
  ::_exit(status == 0 ? 0 : 1);
}

// umount, retried while the loop device lets go of the file (its detach is asynchronous).
bool unmount_when_free(const std::string& dir) {
  for (int i = 0; i < 100; ++i) {
    if (run_command({"umount", dir}, {.keep_output = false}).status == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

result<std::unique_ptr<logged_device>> logged_device::make(const std::string& image,
                                                           const std::string& dir) {
  std::unique_ptr<logged_device> d(new logged_device);
  d->dir_ = dir;
  d->mount_ = dir + "/fuse";
  d->index_ = dir + "/log.index";
  d->data_ = dir + "/log.data";
  served s;
  struct stat st;
  s.image = ::open(image.c_str(), O_RDWR | O_CLOEXEC);
  if (s.image < 0 || ::fstat(s.image, &st) != 0) {
    const int err = errno;
    if (s.image >= 0) ::close(s.image);
    return failure("{}: {}", image, std::strerror(err));
  }
  s.size = static_cast<uint64_t>(st.st_size);
  s.index = ::open(d->index_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
  s.data = ::open(d->data_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  auto close_files = [&] {
    for (int fd : {s.image, s.index, s.data})
      if (fd >= 0) ::close(fd);
  };
  if (s.index < 0 || s.data < 0 || ::mkdir(d->mount_.c_str(), 0700) != 0) {
    const int err = errno;
    close_files();
    return failure("block log in {}: {}", dir, std::strerror(err));
  }
  void* shared = ::mmap(nullptr, sizeof(std::atomic<uint64_t>), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    close_files();
    return failure("block log: mmap: {}", std::strerror(errno));
  }
  d->shared_ = shared;
  s.count = new (shared) std::atomic<uint64_t>(0);
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    close_files();
    return failure("block log: pipe: {}", std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    serve(s, d->mount_, ready[1], parent);
  }
  ::close(ready[1]);
  close_files();
  if (pid < 0) {
    ::close(ready[0]);
    return failure("block log: fork: {}", std::strerror(errno));
  }
  d->child_ = pid;
  char ok = 0;
  const bool up = ::read(ready[0], &ok, 1) == 1 && ok == 1;
  ::close(ready[0]);
  if (!up) return failure("block log: the FUSE file system could not be mounted on {}", d->mount_);
  d->mounted_ = true;
  command_result loop = run_command({"losetup", "--find", "--show", d->mount_ + disk_name});
  if (loop.status != 0)
    return failure("losetup {}{}: {}", d->mount_, disk_name, loop.output);
  while (!loop.output.empty() && loop.output.back() == '\n') loop.output.pop_back();
  d->loop_ = loop.output;
  return d;
}

logged_device::~logged_device() {
  (void)detach();
  if (shared_) ::munmap(shared_, sizeof(std::atomic<uint64_t>));
}

uint64_t logged_device::logged() const {
  return static_cast<const std::atomic<uint64_t>*>(shared_)->load(std::memory_order_acquire);
}

result<void> logged_device::detach() {
  std::string problem;
  if (!loop_.empty()) {
    if (run_command({"losetup", "-d", loop_}, {.keep_output = false}).status != 0)
      problem = "losetup -d " + loop_;
    loop_.clear();
  }
  if (mounted_ && !unmount_when_free(mount_)) {
    problem = "umount " + mount_;
    run_command({"umount", "-l", mount_}, {.keep_output = false});
  }
  mounted_ = false;
  if (child_ > 0) {
    int status = 0;
    // fuse_loop returns once unmounted; a child still serving after 5 s is told to end.
    bool reaped = false;
    for (int i = 0; i < 100 && !reaped; ++i) {
      const pid_t r = ::waitpid(child_, &status, WNOHANG);
      reaped = r == child_ || (r < 0 && errno == ECHILD);
      if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!reaped) {  // still ours (not reaped): its pid cannot have been reused
      ::kill(child_, SIGKILL);
      ::waitpid(child_, &status, 0);
    }
    child_ = -1;
    ::rmdir(mount_.c_str());
  }
  if (!problem.empty()) return failure("block log: {} failed", problem);
  return {};
}

result<std::vector<block_record>> logged_device::records() const {
  const int fd = ::open(index_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failure("{}: {}", index_, std::strerror(errno));
  struct stat st;
  ::fstat(fd, &st);
  std::vector<block_record> log(static_cast<size_t>(st.st_size) / sizeof(block_record));
  const size_t want = log.size() * sizeof(block_record);
  const ssize_t got = ::pread(fd, log.data(), want, 0);
  ::close(fd);
  if (got != static_cast<ssize_t>(want)) return failure("{}: short read", index_);
  return log;
}

result<void> apply_records(int image, int data, const std::vector<block_record>& log, size_t from,
                           size_t to) {
  for (size_t i = from; i < to && i < log.size(); ++i) {
    const block_record& r = log[i];
    if (r.flush) continue;
    loff_t in = static_cast<loff_t>(r.data_at), out = static_cast<loff_t>(r.offset);
    size_t left = r.length;
    while (left) {
      const ssize_t n = ::copy_file_range(data, &in, image, &out, left, 0);
      if (n <= 0) return failure("applying the block log: {}", n < 0 ? std::strerror(errno) : "short");
      left -= static_cast<size_t>(n);
    }
  }
  return {};
}

result<void> copy_sparse(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return failure("{}: {}", from, std::strerror(errno));
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    const int err = errno;
    ::close(in);
    return failure("{}: {}", to, std::strerror(err));
  }
  struct stat st;
  ::fstat(in, &st);
  std::string problem;
  if (::ftruncate(out, st.st_size) != 0) problem = std::strerror(errno);
  for (off_t at = 0; problem.empty() && at < st.st_size;) {
    const off_t data = ::lseek(in, at, SEEK_DATA);
    if (data < 0) break;  // ENXIO: holes to the end
    const off_t hole = ::lseek(in, data, SEEK_HOLE);
    loff_t i = data, o = data;
    while (i < hole) {
      const ssize_t n = ::copy_file_range(in, &i, out, &o, static_cast<size_t>(hole - i), 0);
      if (n <= 0) {
        problem = n < 0 ? std::strerror(errno) : "short copy";
        break;
      }
    }
    at = hole;
  }
  ::close(in);
  ::close(out);
  if (!problem.empty()) return failure("copying {} to {}: {}", from, to, problem);
  return {};
}

}  // namespace fsrr::lab
