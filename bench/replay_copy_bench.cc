// bench_replay_copy: the pieces of bench/replay_copy.sh that need the library.
//   trace SRC DST OUT   write the trace `cp -a SRC DST` by coreutils 9 would record, without
//                       `fsrr record`: the tree is walked and each entry gets cp's exact
//                       syscall sequence (strace -f cp -a on coreutils 9.1, running as root)
//   native CMD ARGS...  run CMD (e.g. cp -a SRC DST); print "wall_s user_s sys_s"
//   replay TRACE TARGET prepare TRACE's tree in TARGET, then replay its events --timing afap
//                       as `fsrr replay` does; print "wall_s user_s sys_s events mismatches
//                       cpu_s": wall_s is the report's wall_ns (the events alone, not the
//                       prepare step); user_s, sys_s (the process) and cpu_s (the replaying,
//                       calling thread) also count the engine's setup before its clock starts
// FSRR_BENCH_INLINE_DECODE=1: decode on the replaying thread (engine_options::decode_ahead).
// FSRR_BENCH_QUEUE_DEPTH=N: engine_options::queue_depth.
// FSRR_BENCH_COLD=1: the replay starts on the freshly prepared tree, not read once first as
// the native side's source tree has been.
// FSRR_BENCH_SKIP_PREPARE=1: TARGET already holds the initial tree (an earlier replay's, with
// the copy removed), for quick repeated measurements.
// To profile the replay alone: perf record --control=fifo:CTL,ACK -D -1 ... with
// FSRR_PERF_CTL=CTL and FSRR_PERF_ACK=ACK in the environment.
#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine.h"
#include "prepare.h"
#include "trace_writer.h"

using namespace fsrr;

namespace {

constexpr uint64_t cp_copy_size = 9223372035781033984ull;  // coreutils' "to the end" length
constexpr uint32_t acl_bytes = 28;                         // a minimal access ACL

int64_t ns_of(const timespec& t) {
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

// getdents64 results for `names` (plus "." and ".."), one entry per record, 32 KiB calls.
std::vector<int64_t> getdents_calls(const std::vector<std::string>& names) {
  auto rec = [](size_t len) { return static_cast<int64_t>((19 + len + 1 + 7) & ~size_t{7}); };
  std::vector<int64_t> calls;
  int64_t fill = rec(1) + rec(2);
  for (const auto& n : names) {
    if (fill + rec(n.size()) > 32768) {
      calls.push_back(fill);
      fill = 0;
    }
    fill += rec(n.size());
  }
  calls.push_back(fill);
  calls.push_back(0);
  return calls;
}

class cp_recording {
 public:
  explicit cp_recording(const std::string& out) : w_(out, header(), options()) {
    t_ = w_.add_thread({1, 1, 0, w_.intern_string("cp"), 1});
    acl_access_ = w_.intern_string("system.posix_acl_access");
    acl_default_ = w_.intern_string("system.posix_acl_default");
  }

  // cp -a SRC DST where DST does not exist.
  void copy(const std::string& src, const std::string& dst) {
    for (size_t slash = src.find('/', 1); slash != std::string::npos;
         slash = src.find('/', slash + 1))
      snapshot(src.substr(0, slash));
    struct stat st;
    if (::lstat(src.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw std::runtime_error(src + ": not a directory");
    event& probe = add(op::openat, -ENOENT);
    probe.path = w_.intern_path(dst);
    probe.flags = O_RDONLY | O_PATH | O_DIRECTORY;
    stat_path(src, src_file(st), AT_SYMLINK_NOFOLLOW);
    stat_path(dst, no_id, AT_SYMLINK_NOFOLLOW, -ENOENT);
    copy_dir(src, dst, st);
    add(op::exit);
  }

  void finish() {
    flush();
    w_.finish();
  }

 private:
  static header_info header() {
    header_info h;
    h.writer = "bench_replay_copy";
    h.command = {"cp", "-a"};
    return h;
  }
  static writer_options options() {
    writer_options o;
    o.overwrite = true;
    return o;
  }

  // The event is appended at the next add (or flush); 2 µs apart, like cp on tmpfs.
  event& add(op kind, int64_t result = 0) {
    flush();
    e_ = event{};
    e_.thread = t_;
    e_.kind = kind;
    e_.result = result;
    e_.ts = ts_ += 2000;
    e_.dur = 1000;
    staged_ = true;
    return e_;
  }
  void flush() {
    if (staged_) w_.append(e_);
    staged_ = false;
  }

  file_id src_file(const struct stat& st) {
    return w_.intern_file({st.st_dev, st.st_ino, 0, st.st_mode & S_IFMT});
  }
  file_id new_file(uint32_t type) { return w_.intern_file({1, ++next_ino_, 1, type}); }

  void snapshot(const std::string& p) {
    struct stat st;
    if (p.empty() || ::lstat(p.c_str(), &st) != 0) return;
    tree_entry t;
    t.path = w_.intern_path(p);
    t.mode = st.st_mode;
    t.uid = st.st_uid;
    t.gid = st.st_gid;
    t.size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
    t.allocated = t.size;
    t.atime_ns = ns_of(st.st_atim);
    t.mtime_ns = ns_of(st.st_mtim);
    t.ctime_ns = ns_of(st.st_ctim);
    t.nlink = static_cast<uint32_t>(st.st_nlink);
    t.file = src_file(st);
    w_.add_tree_entry(t);
  }

  void stat_path(const std::string& p, file_id f, uint32_t flags, int64_t result = 0) {
    event& e = add(op::newfstatat, result);
    e.path = w_.intern_path(p);
    e.file = f;
    e.flags = flags;
  }
  void stat_fd(int fd, const std::string& p, file_id f) {
    event& e = add(op::newfstatat);
    e.fd = fd;
    e.path = w_.intern_path(p);
    e.file = f;
    e.flags = AT_EMPTY_PATH;
  }
  void close(int fd, file_id f) {
    event& e = add(op::close);
    e.fd = fd;
    e.file = f;
  }

  void copy_dir(const std::string& src, const std::string& dst, const struct stat& st) {
    snapshot(src);
    const file_id in = src_file(st), out = new_file(S_IFDIR);
    event& mk = add(op::mkdirat);
    mk.path = w_.intern_path(dst);
    mk.mode = 0700;
    stat_path(dst, out, AT_SYMLINK_NOFOLLOW);
    event& od = add(op::openat, 3);
    od.path = w_.intern_path(src);
    od.file = in;
    od.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY;
    stat_fd(3, src, in);
    std::vector<std::pair<ino_t, std::string>> entries;  // cp copies in inode order
    if (DIR* d = ::opendir(src.c_str())) {
      while (const dirent* de = ::readdir(d))
        if (std::string n = de->d_name; n != "." && n != "..") entries.emplace_back(de->d_ino, n);
      ::closedir(d);
    }
    std::sort(entries.begin(), entries.end());
    std::vector<std::string> names;
    for (auto& [ino, n] : entries) names.push_back(std::move(n));
    for (const int64_t r : getdents_calls(names)) {
      event& gd = add(op::getdents64, r);
      gd.fd = 3;
      gd.file = in;
      gd.size = 32768;
    }
    close(3, in);
    for (const auto& n : names) {
      const std::string s = src + "/" + n, t = dst + "/" + n;
      struct stat cs;
      if (::lstat(s.c_str(), &cs) != 0) continue;
      if (S_ISDIR(cs.st_mode)) {
        stat_path(s, src_file(cs), AT_SYMLINK_NOFOLLOW);
        copy_dir(s, t, cs);
      } else if (S_ISREG(cs.st_mode)) {
        copy_file(s, t, cs);
      } else {
        throw std::runtime_error(s + ": only regular files and directories are modelled");
      }
    }
    event& ut = add(op::utimensat);
    ut.path = w_.intern_path(dst);
    ut.file = out;
    ut.offset = ns_of(st.st_atim);
    ut.offset2 = ns_of(st.st_mtim);
    event& ch = add(op::fchownat);
    ch.path = w_.intern_path(dst);
    ch.file = out;
    ch.flags = AT_SYMLINK_NOFOLLOW;
    ch.aux = uint64_t{st.st_uid} << 32 | st.st_gid;
    for (int i = 0; i < 2; ++i) {
      event& l = add(op::llistxattr);
      l.path = w_.intern_path(src);
      l.file = in;
    }
    for (const string_id acl : {acl_access_, acl_default_}) {
      event& g = add(op::getxattr, -ENODATA);
      g.path = w_.intern_path(src);
      g.file = in;
      g.aux = acl;
      g.size = 132;
      stat_path(src, in, 0);
    }
    event& sx = add(op::setxattr);
    sx.path = w_.intern_path(dst);
    sx.file = out;
    sx.aux = acl_access_;
    sx.size = acl_bytes;
    sx.mode = acl_mode_present | (st.st_mode & 0777);
    event& rx = add(op::removexattr);
    rx.path = w_.intern_path(dst);
    rx.file = out;
    rx.aux = acl_default_;
  }

  void copy_file(const std::string& src, const std::string& dst, const struct stat& st) {
    snapshot(src);
    const file_id in = src_file(st), out = new_file(S_IFREG);
    const int64_t n = st.st_size;
    stat_path(src, in, AT_SYMLINK_NOFOLLOW);
    event& o1 = add(op::openat, 3);
    o1.path = w_.intern_path(src);
    o1.file = in;
    o1.flags = O_RDONLY | O_NOFOLLOW;
    stat_fd(3, src, in);
    event& o2 = add(op::openat, 4);
    o2.path = w_.intern_path(dst);
    o2.file = out;
    o2.flags = O_WRONLY | O_CREAT | O_EXCL;
    o2.mode = 0600;
    event& cl = add(op::ioctl, -EOPNOTSUPP);
    cl.fd = 4;
    cl.fd2 = 3;
    cl.file = out;
    cl.file2 = in;
    cl.aux = FICLONE;
    stat_fd(4, dst, out);
    event& fa = add(op::fadvise64);
    fa.fd = 3;
    fa.file = in;
    fa.flags = POSIX_FADV_SEQUENTIAL;
    for (const int64_t copied : {n, int64_t{0}}) {
      event& c = add(op::copy_file_range, copied);
      c.fd = 3;
      c.fd2 = 4;
      c.file = in;
      c.file2 = out;
      c.offset = c.offset2 = -1;  // NULL: at the fds' positions
      c.size = cp_copy_size;
      if (n == 0) break;
    }
    if (n == 0) {  // nothing copied: cp reads once to tell an empty file from /proc-like ones
      event& r = add(op::read);
      r.fd = 3;
      r.file = in;
      r.size = 131072;
    }
    event& ut = add(op::utimensat);
    ut.fd = 4;
    ut.path = w_.intern_path(dst);
    ut.file = out;
    ut.offset = ns_of(st.st_atim);
    ut.offset2 = ns_of(st.st_mtim);
    for (int i = 0; i < 2; ++i) {
      event& l = add(op::flistxattr);
      l.fd = 3;
      l.file = in;
    }
    event& g = add(op::fgetxattr, -ENODATA);
    g.fd = 3;
    g.file = in;
    g.aux = acl_access_;
    g.size = 132;
    stat_fd(3, src, in);
    event& sx = add(op::fsetxattr);
    sx.fd = 4;
    sx.file = out;
    sx.aux = acl_access_;
    sx.size = acl_bytes;
    sx.mode = acl_mode_present | (st.st_mode & 0777);  // how cp -a gives the copy its mode
    close(4, out);
    close(3, in);
  }

  trace_writer w_;
  thread_id t_;
  string_id acl_access_, acl_default_;
  event e_;
  bool staged_ = false;
  uint64_t ts_ = 1'000'000;
  uint64_t next_ino_ = 0;
};

// The trace holds canonical absolute paths, as the kernel resolved them.
std::string canonical(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : p.substr(0, slash ? slash : 1);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) throw std::runtime_error(dir + ": no such directory");
  std::string r = real;
  ::free(real);
  const std::string last = slash == std::string::npos ? p : p.substr(slash + 1);
  return last.empty() ? r : (r == "/" ? "" : r) + "/" + last;
}

int write_trace(const std::string& src, const std::string& dst, const std::string& out) {
  cp_recording r(out);
  r.copy(canonical(src), canonical(dst));
  r.finish();
  return 0;
}

int native(char** argv) {
  timespec a, b;
  ::clock_gettime(CLOCK_MONOTONIC, &a);
  pid_t pid;
  if (::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) return 1;
  int status;
  rusage ru;
  ::wait4(pid, &status, 0, &ru);
  ::clock_gettime(CLOCK_MONOTONIC, &b);
  fmt::print("{:.6f} {:.6f} {:.6f}\n", (ns_of(b) - ns_of(a)) / 1e9, seconds(ru.ru_utime),
             seconds(ru.ru_stime));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// Tells a `perf record --control=fifo:CTL,ACK` session to start or stop sampling.
void perf_control(const char* command) {
  const char* ctl = std::getenv("FSRR_PERF_CTL");
  const char* ack = std::getenv("FSRR_PERF_ACK");
  if (!ctl || !ack) return;
  const int c = ::open(ctl, O_WRONLY | O_CLOEXEC), a = ::open(ack, O_RDONLY | O_CLOEXEC);
  if (c >= 0 && a >= 0 && ::write(c, command, std::strlen(command)) > 0) {
    char buf[8];
    [[maybe_unused]] const ssize_t n = ::read(a, buf, sizeof buf);
  }
  if (c >= 0) ::close(c);
  if (a >= 0) ::close(a);
}

// Reads every regular file under `dir` once.
void read_tree(const std::string& dir) {
  std::vector<char> buf(1 << 20);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.is_symlink()) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    while (::read(fd, buf.data(), buf.size()) > 0) {
    }
    ::close(fd);
  }
}

int replay(const std::string& trace_path, const std::string& target_dir) {
  trace_reader trace(trace_path);
  target_root target(target_dir);
  const data_source data(data_spec{});
  prepare_options popt;
  popt.privilege.owners = ::geteuid() == 0;  // as cp -a, which it is measured against
  const bool reuse = std::getenv("FSRR_BENCH_SKIP_PREPARE");
  const prepare_result p = reuse ? prepare_result{} : prepare_tree(trace, target, data, popt);
  if (p.errors) fmt::print(stderr, "prepare: {} errors\n", p.errors);
  // The native rounds copy a source tree that the recording and the rounds before have read;
  // a freshly prepared tree's pages would first be moved to the active list by the replay.
  if (!reuse && !std::getenv("FSRR_BENCH_COLD")) read_tree(target_dir);
  engine_options eo;
  eo.timing.mode = timing_mode::afap;
  eo.decode_ahead = !std::getenv("FSRR_BENCH_INLINE_DECODE");
  if (const char* depth = std::getenv("FSRR_BENCH_QUEUE_DEPTH")) eo.queue_depth = std::stoul(depth);
  rusage r0, r1;
  timespec c0, c1;
  perf_control("enable");
  ::getrusage(RUSAGE_SELF, &r0);
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  const replay_stats s = replay_events(trace, target, data, eo);
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  ::getrusage(RUSAGE_SELF, &r1);
  perf_control("disable");
  fmt::print("{:.6f} {:.6f} {:.6f} {} {} {:.6f}\n", s.wall_ns / 1e9,
             seconds(r1.ru_utime) - seconds(r0.ru_utime),
             seconds(r1.ru_stime) - seconds(r0.ru_stime), s.events, s.mismatches,
             (ns_of(c1) - ns_of(c0)) / 1e9);
  for (const auto& m : s.first_mismatches)
    fmt::print(stderr, "mismatch: {} {}: recorded {}, replayed {}\n", name(m.kind), m.path,
               m.recorded, m.replayed);
  if (!s.stopped.empty()) fmt::print(stderr, "stopped: {}\n", s.stopped);
  return s.stopped.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "trace" && argc == 5) return write_trace(argv[2], argv[3], argv[4]);
    if (cmd == "native" && argc > 2) return native(argv + 2);
    if (cmd == "replay" && argc == 4) return replay(argv[2], argv[3]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_replay_copy: {}\n", e.what());
    return 1;
  }
  fmt::print(
      stderr,
      "usage: bench_replay_copy trace SRC DST OUT | native CMD ARGS... | replay TRACE TARGET\n");
  return 2;
}
