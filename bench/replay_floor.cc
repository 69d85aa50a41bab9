// replay_floor TRACE TARGET: the floor under `fsrr replay --timing afap` of TRACE. Builds the
// trace's initial tree beneath TARGET with fsrr's prepare (as bench_replay_copy does, then reads
// it once), decodes every event into a plain array before the clock starts, and then issues
// the ops fsrr would issue with nothing else to do: one thread per recorded thread, each
// running its ops in their recorded order, waiting only where an op follows another thread's
// op on the same file, path, parent directory or open file that had ended before it started
// (fsrr's ordering rules, looked up ahead of time from each thread's last four ops on a key;
// the wait is fsrr's own progress counter: a spin, then a futex the other thread wakes once
// the op waited for is done); paths resolved from a per-thread cache of parent
// directory fds, as fsrr's path cache does; reads into one buffer, writes from one fixed
// buffer; no result checks, no report, no data generation, no latency clock.
//
// What it leaves out, and fsrr does too: modelled events (fork, exec, exit, mmap, pipe and
// socket I/O), ioctls and copies whose recorded failure came from the recording's file system
// (fsrr takes those as recorded). What it leaves out and fsrr does not: splice, flock, fcntl
// and ioctls other than FICLONE; reads and writes are cut at 4 MiB (fsrr's at 256 MiB). What
// it cannot follow: a directory renamed while another thread holds it in its cache.
//
// Prints, on one line: wall_s user_s sys_s ops differing cpu_s — the timed part only; `differing`
// counts the ops whose success or failure differs from the recording's (a sanity check: the
// floor did the same work).
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "fd_map.h"
#include "ordering.h"
#include "prepare.h"
#include "read_tree.h"
#include "trace_error.h"
#include "trace_reader.h"
#include "xattr_value.h"

using namespace fsrr;

namespace {

constexpr uint32_t none = UINT32_MAX;
constexpr size_t buffer_bytes = 4u << 20;

// A path as the floor reaches it: absolute beneath TARGET, and its parent directory (an
// index into the parents table) with its last name.
struct floor_path {
  std::string full;
  uint32_t parent = none;
  std::string name;
  uint32_t as_parent = none;  // the path is this parent directory
};

struct floor_op {
  event e;                    // as recorded (fd fields unused)
  uint32_t h1 = none, h2 = none;  // handles (fd_map's): indexes into the real fds
  uint32_t p1 = none, p2 = none;  // indexes into paths
  uint32_t dir = none;        // getdents: the listed directory's handle
  bool pos1 = false, pos2 = false;
  uint32_t released = 0, released_count = 0;  // handles to close after the op
  uint32_t deps = 0, dep_count = 0;           // into deps: (thread, ops it must have done)
  uint32_t text = none;       // an xattr name or symlink target: into strings
  uint32_t value = none;      // a set xattr's value (valid where the kernel parses it)
};

struct dep {
  uint32_t thread;
  uint32_t count;
};

struct plan {
  std::vector<floor_path> paths;
  std::vector<std::string> parents;      // absolute directories
  std::vector<std::string> strings;
  std::vector<std::vector<uint8_t>> values;
  std::vector<std::vector<floor_op>> ops;  // by floor thread
  std::vector<uint32_t> released;
  std::vector<dep> deps;
  size_t handles = 0;
};

std::string parent_of(const std::string& p) {
  const size_t at = p.rfind('/');
  return at == 0 || at == std::string::npos ? "/" : p.substr(0, at);
}

// Ops fsrr does not issue (modelled, or on pipes and sockets), and recorded failures that
// came from the recording's file systems.
bool issued(const event& e) {
  const op_class cls = info(e.kind).cls;
  switch (cls) {
    case op_class::open:
    case op_class::close:
    case op_class::read:
    case op_class::write:
    case op_class::copy:
    case op_class::ioctl:
    case op_class::seek:
    case op_class::dir:
    case op_class::sync:
    case op_class::resize:
    case op_class::name:
    case op_class::meta:
    case op_class::attr:
    case op_class::xattr:
    case op_class::hint:
      break;
    default:
      return false;
  }
  if (e.kind == op::splice || e.kind == op::flock) return false;
  if ((cls == op_class::ioctl || cls == op_class::copy) && e.result < 0 &&
      (e.result == -EOPNOTSUPP || e.result == -EXDEV || e.result == -ENOTTY ||
       e.result == -EINVAL))
    return false;
  if (has(e.kind, F_FD) && !has(e.kind, F_PATH) && e.file == no_id) return false;  // a pipe
  return true;
}

plan make_plan(trace_reader& trace, const std::string& target, const data_source& data) {
  plan p;
  std::vector<thread_info> threads(trace.thread_count() + 1);
  for (thread_id t = 1; t < threads.size(); ++t) threads[t] = trace.thread(t);
  fd_map fds(threads);
  std::unordered_map<path_id, uint32_t> path_index;
  std::unordered_map<std::string, uint32_t> parent_index;
  std::unordered_map<thread_id, uint32_t> thread_index;
  std::unordered_map<string_id, uint32_t> string_index;
  auto path_of = [&](path_id id) -> uint32_t {
    if (id == no_id || id == 0) return none;
    auto [at, added] = path_index.try_emplace(id, static_cast<uint32_t>(p.paths.size()));
    if (added) {
      floor_path fp;
      fp.full = target + trace.placed_path(id);
      if (fp.full.size() > target.size() && fp.full.back() == '/') fp.full.pop_back();  // "/"
      const std::string par = parent_of(fp.full);
      auto [pi, padded] = parent_index.try_emplace(par, static_cast<uint32_t>(p.parents.size()));
      if (padded) p.parents.push_back(par);
      fp.parent = pi->second;
      fp.name = fp.full.substr(fp.full.rfind('/') + 1);
      p.paths.push_back(std::move(fp));
    }
    return at->second;
  };
  // The ordering keys, as fsrr's order_tracker keeps them: per key, each thread's latest few
  // ops on it (thread, count, ts, end), used exclusively (the file, the path itself) or
  // shared (a parent directory of a name: ops on different names in it do not wait for each
  // other, only for ops on the directory itself). An op waits for another thread's newest
  // use that had ended before it started; a close that releases an open file for every use
  // of it, overlapping too (order_all); an op that met EEXIST for every exclusive use of its
  // names (order_race).
  struct use {
    uint32_t thread, count;
    uint64_t ts, end;
  };
  struct key_uses {
    std::vector<use> exclusive, shared;
  };
  constexpr size_t kept_per_thread = 4;
  std::unordered_map<uint64_t, key_uses> uses;
  std::vector<dep> mine;
  auto after = [&](const std::vector<use>& v, uint32_t t, const event& e, bool all) {
    for (const use& u : v)
      if (u.thread != t && (all || u.end <= e.ts)) {
        auto at = std::find_if(mine.begin(), mine.end(),
                               [&](const dep& d) { return d.thread == u.thread; });
        if (at == mine.end())
          mine.push_back({u.thread, u.count});
        else
          at->count = std::max(at->count, u.count);
      }
  };
  auto note = [&](std::vector<use>& v, uint32_t t, uint32_t count, const event& e) {
    size_t mine_kept = 0, oldest = v.size();
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].thread == t && (++mine_kept, oldest == v.size())) oldest = i;
    if (mine_kept >= kept_per_thread) v.erase(v.begin() + static_cast<ptrdiff_t>(oldest));
    v.push_back({t, count, e.ts, e.ts + e.dur});
  };
  enum wait_rule { ended, race, all };
  auto key_deps = [&](uint64_t key, uint32_t t, uint32_t count, const event& e, bool shared,
                      wait_rule rule = ended) {
    key_uses& k = uses[key];
    after(k.exclusive, t, e, rule != ended);
    if (!shared) after(k.shared, t, e, rule == all);
    note(shared ? k.shared : k.exclusive, t, count, e);
  };
  // A path's key and its parent's: the same for a directory and the names in it.
  auto path_key = [&](const std::string& full) { return uint64_t{2} << 60 | (std::hash<std::string>{}(full) >> 4); };
  fd_effect fx;
  auto events = trace.events();
  for (event e; events.next(e);) {
    fds.apply(e, fx);
    floor_op o;
    const bool go = issued(e);
    if (go) {
      o.e = e;
      o.h1 = fx.h1 ? fx.h1 : none;
      o.h2 = fx.h2 ? fx.h2 : none;
      o.pos1 = fx.pos1;
      o.pos2 = fx.pos2;
      if (has(e.kind, F_PATH)) o.p1 = path_of(e.path);
      if (has(e.kind, F_PATH2)) o.p2 = path_of(e.path2);
      if (info(e.kind).cls == op_class::dir && fx.h1) o.dir = fx.h1;
      const bool named = e.kind == op::symlink || e.kind == op::symlinkat ||
                         info(e.kind).cls == op_class::xattr;
      if (named && has(e.kind, F_AUX) && e.aux && e.aux <= trace.string_count()) {
        const auto sid = static_cast<string_id>(e.aux);
        auto [at, added] = string_index.try_emplace(sid, static_cast<uint32_t>(p.strings.size()));
        if (added) p.strings.push_back(trace.string(sid));
        o.text = at->second;
        if (e.kind == op::setxattr || e.kind == op::lsetxattr || e.kind == op::fsetxattr) {
          o.value = static_cast<uint32_t>(p.values.size());
          p.values.push_back(xattr_value(p.strings[o.text], static_cast<uint32_t>(std::min<uint64_t>(e.size, 65536)), data, 0));
        }
      }
    }
    // Releases happen whether or not the op is issued (an exit closes the process's files).
    if (go || !fx.released.empty()) {
      auto [ti, added] = thread_index.try_emplace(e.thread, static_cast<uint32_t>(p.ops.size()));
      if (added) p.ops.emplace_back();
      const uint32_t t = ti->second;
      if (!go) o.e.kind = op::exit;  // only closes what it releases
      o.released = static_cast<uint32_t>(p.released.size());
      o.released_count = static_cast<uint32_t>(fx.released.size());
      for (const handle_id h : fx.released) p.released.push_back(h);
      const auto count = static_cast<uint32_t>(p.ops[t].size() + 1);
      mine.clear();
      if (go) {
        if (e.file != no_id) key_deps(uint64_t{1} << 62 | e.file, t, count, e, false);
        if (e.file2 != no_id) key_deps(uint64_t{1} << 62 | e.file2, t, count, e, false);
        for (const uint32_t pi : {o.p1, o.p2})
          if (pi != none) {
            key_deps(path_key(p.paths[pi].full), t, count, e, false,
                     e.result == -EEXIST ? race : ended);
            key_deps(path_key(p.parents[p.paths[pi].parent]), t, count, e, true);
          }
        if (o.dir != none && fds.handle(o.dir).path != no_id)  // a listing: every name in it
          key_deps(path_key(p.paths[path_of(fds.handle(o.dir).path)].full), t, count, e, false);
        if (o.h1 != none) key_deps(uint64_t{1} << 61 | o.h1, t, count, e, false);
        if (o.h2 != none) key_deps(uint64_t{1} << 61 | o.h2, t, count, e, false);
      }
      for (const handle_id h : fx.released) key_deps(uint64_t{1} << 61 | h, t, count, e, false, all);
      o.deps = static_cast<uint32_t>(p.deps.size());
      o.dep_count = static_cast<uint32_t>(mine.size());
      p.deps.insert(p.deps.end(), mine.begin(), mine.end());
      p.ops[t].push_back(o);
    }
    // Handles are not recycled: a number another thread reuses could be stored before the
    // first thread's close has read it.
  }
  or_throw(events.status());
  for (floor_path& fp : p.paths)
    if (const auto at = parent_index.find(fp.full); at != parent_index.end()) fp.as_parent = at->second;
  p.handles = fds.handle_capacity();
  return p;
}

int64_t sys(long r) { return r < 0 ? -errno : r; }

struct runner {
  const plan& p;
  std::vector<std::atomic<int>>& real;  // by handle
  std::vector<progress_counter>& prog;  // fsrr's: waits as a replay lane waits
  const std::atomic<bool>& stop;
  uint32_t self;
  std::vector<uint8_t> buf = std::vector<uint8_t>(buffer_bytes, 0x5a);
  std::vector<int> dirs = std::vector<int>(p.parents.size(), -1);
  uint64_t differing = 0;

  int fd(uint32_t h) const { return h == none ? -1 : real[h].load(std::memory_order_relaxed); }

  // The parent directory's fd (opened once per thread) and the name in it; -1 if the
  // directory cannot be opened (then the absolute path is used).
  int dir_of(uint32_t pi) {
    int& d = dirs[p.paths[pi].parent];
    if (d < 0) d = ::open(p.parents[p.paths[pi].parent].c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    return d;
  }
  const char* at_name(uint32_t pi, int& d) {
    d = dir_of(pi);
    return d >= 0 ? p.paths[pi].name.c_str() : p.paths[pi].full.c_str();
  }
  // A directory renamed or removed: this thread's fd of it is no longer at its name.
  void forget_dir(uint32_t pi) {
    const uint32_t as = p.paths[pi].as_parent;
    if (as != none && dirs[as] >= 0) ::close(dirs[as]), dirs[as] = -1;
  }
  void forget_dirs() {
    for (int& d : dirs)
      if (d >= 0) ::close(d), d = -1;
  }

  static timespec ts_of(int64_t ns) {
    if (ns == time_now) return {0, UTIME_NOW};
    if (ns == time_omit) return {0, UTIME_OMIT};
    return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  }

  int64_t issue(const floor_op& o) {
    const event& e = o.e;
    const size_t n = std::min<uint64_t>(e.size, buf.size());
    int d = AT_FDCWD;
    // On the fd itself (fstatat's AT_EMPTY_PATH, futimens' NULL), as fsrr's on_fd()
    const bool on_fd = has(e.kind, F_FD) && e.fd >= 0;
    const char* name = o.p1 != none && !on_fd ? at_name(o.p1, d) : nullptr;
    if (d < 0) d = AT_FDCWD;
    const std::string* text = o.text != none ? &p.strings[o.text] : nullptr;
    switch (e.kind) {
      case op::open:
      case op::openat:
      case op::openat2:
      case op::creat: {
        const int flags = e.kind == op::creat ? O_CREAT | O_WRONLY | O_TRUNC
                                              : static_cast<int>(e.flags) & ~O_CLOEXEC;
        const int r = ::openat(d, name, flags | O_CLOEXEC, e.mode & 07777);
        if (r >= 0 && o.h1 != none) real[o.h1].store(r, std::memory_order_relaxed);
        return sys(r);
      }
      case op::close:
        return 0;  // the release closes it
      case op::read:
        return sys(::read(fd(o.h1), buf.data(), n));
      case op::pread64:
        return sys(::pread(fd(o.h1), buf.data(), n, e.offset));
      case op::write:
        return sys(::write(fd(o.h1), buf.data(), n));
      case op::pwrite64:
        return sys(::pwrite(fd(o.h1), buf.data(), n, e.offset));
      case op::copy_file_range: {
        loff_t in = e.offset, out = e.offset2;
        return sys(::copy_file_range(fd(o.h1), o.pos1 ? nullptr : &in, fd(o.h2),
                                     o.pos2 ? nullptr : &out, e.size, e.flags));
      }
      case op::sendfile: {
        off_t in = e.offset;
        return sys(::sendfile(fd(o.h1), fd(o.h2), o.pos2 ? nullptr : &in, e.size));
      }
      case op::ioctl:
        if (e.aux == FICLONE) return sys(::ioctl(fd(o.h1), FICLONE, fd(o.h2)));
        return 0;
      case op::lseek:
        return sys(::lseek(fd(o.h1), e.offset, static_cast<int>(e.aux)));
      case op::getdents:
      case op::getdents64:
        return sys(::syscall(SYS_getdents64, fd(o.dir), buf.data(), std::min<size_t>(n, 1 << 20)));
      case op::fsync:
        return sys(::fsync(fd(o.h1)));
      case op::fdatasync:
        return sys(::fdatasync(fd(o.h1)));
      case op::ftruncate:
        return sys(::ftruncate(fd(o.h1), static_cast<off_t>(e.size)));
      case op::fallocate:
        return sys(::fallocate(fd(o.h1), static_cast<int>(e.flags), e.offset, static_cast<off_t>(e.size)));
      case op::fadvise64:
        return -::posix_fadvise(fd(o.h1), e.offset, static_cast<off_t>(e.size), static_cast<int>(e.flags));
      case op::mkdir:
      case op::mkdirat:
        return sys(::mkdirat(d, name, e.mode & 07777));
      case op::rmdir: {
        const int64_t r = sys(::unlinkat(d, name, AT_REMOVEDIR));
        if (r == 0) forget_dir(o.p1);
        return r;
      }
      case op::unlink:
      case op::unlinkat:
        return sys(::unlinkat(d, name, e.kind == op::unlinkat ? static_cast<int>(e.flags) & AT_REMOVEDIR : 0));
      case op::rename:
      case op::renameat:
      case op::renameat2: {
        if (o.p2 == none) return 0;
        int d2 = AT_FDCWD;
        const char* name2 = at_name(o.p2, d2);
        if (d2 < 0) d2 = AT_FDCWD;
        const int64_t r = sys(::renameat2(d, name, d2, name2, e.kind == op::renameat2 ? e.flags : 0));
        if (r == 0) forget_dir(o.p1);
        return r;
      }
      case op::link:
      case op::linkat: {
        if (o.p2 == none) return 0;
        int d2 = AT_FDCWD;
        const char* name2 = at_name(o.p2, d2);
        if (d2 < 0) d2 = AT_FDCWD;
        return sys(::linkat(d, name, d2, name2, 0));
      }
      case op::symlink:
      case op::symlinkat:
        return text ? sys(::symlinkat(text->c_str(), d, name)) : 0;
      case op::stat:
      case op::lstat:
      case op::newfstatat:
      case op::statx:
      case op::fstat: {
        struct stat st;
        if (!name) return sys(::fstat(fd(o.h1), &st));
        const int flags = e.kind == op::stat ? 0 : e.kind == op::lstat ? AT_SYMLINK_NOFOLLOW
                                                                         : static_cast<int>(e.flags) & AT_SYMLINK_NOFOLLOW;
        return sys(::fstatat(d, name, &st, flags));
      }
      case op::statfs: {
        struct statfs sf;
        return sys(::statfs(p.paths[o.p1].full.c_str(), &sf));
      }
      case op::access:
      case op::faccessat2:
        return sys(::faccessat(d, name, static_cast<int>(e.mode), 0));
      case op::readlink:
      case op::readlinkat:
        return sys(::readlinkat(d, name, reinterpret_cast<char*>(buf.data()), std::max<size_t>(n, 1)));
      case op::chmod:
      case op::fchmodat:
        return sys(::fchmodat(d, name, e.mode & 07777, 0));
      case op::fchmod:
        return sys(::fchmod(fd(o.h1), e.mode & 07777));
      case op::chown:
      case op::lchown:
      case op::fchown:
      case op::fchownat: {
        const auto uid = static_cast<uid_t>(-1), gid = static_cast<gid_t>(-1);  // fsrr's default
        if (!name) return sys(::fchown(fd(o.h1), uid, gid));
        return sys(::fchownat(d, name, uid, gid, e.kind == op::chown ? 0 : AT_SYMLINK_NOFOLLOW));
      }
      case op::utimes:
      case op::futimesat:
      case op::utimensat: {
        const timespec ts[2] = {ts_of(e.offset), ts_of(e.offset2)};
        if (!name) return sys(::futimens(fd(o.h1), ts));
        return sys(::utimensat(d, name, ts, static_cast<int>(e.flags) & AT_SYMLINK_NOFOLLOW));
      }
      case op::setxattr:
      case op::lsetxattr:
      case op::fsetxattr:
        if (!text || o.value == none) return 0;
        if (!name)
          return sys(::fsetxattr(fd(o.h1), text->c_str(), p.values[o.value].data(),
                                 p.values[o.value].size(), static_cast<int>(e.flags)));
        return sys(::lsetxattr(p.paths[o.p1].full.c_str(), text->c_str(), p.values[o.value].data(),
                               p.values[o.value].size(), static_cast<int>(e.flags)));
      case op::getxattr:
      case op::lgetxattr:
      case op::fgetxattr:
        if (!text) return 0;
        if (!name) return sys(::fgetxattr(fd(o.h1), text->c_str(), buf.data(), n));
        return sys(::lgetxattr(p.paths[o.p1].full.c_str(), text->c_str(), buf.data(), n));
      case op::listxattr:
      case op::llistxattr:
      case op::flistxattr: {
        char* list = reinterpret_cast<char*>(buf.data());
        if (!name) return sys(::flistxattr(fd(o.h1), list, n));
        return sys(::llistxattr(p.paths[o.p1].full.c_str(), list, n));
      }
      case op::removexattr:
        return text ? sys(::lremovexattr(p.paths[o.p1].full.c_str(), text->c_str())) : 0;
      default:
        return 0;  // other ops fsrr issues rarely (fcntl, flags): not costed here
    }
  }

  void run() {
    const std::vector<floor_op>& mine = p.ops[self];
    for (size_t i = 0; i < mine.size(); ++i) {
      const floor_op& o = mine[i];
      for (uint32_t k = 0; k < o.dep_count; ++k) {
        const dep& d = p.deps[o.deps + k];
        if (!prog[d.thread].reached(d.count)) prog[d.thread].wait(d.count, stop);
      }
      if (o.e.kind != op::exit) {
        const int64_t r = issue(o);
        if ((r < 0) != (o.e.result < 0)) {
          if (++differing <= 5 && std::getenv("FSRR_FLOOR_SAY"))
            fmt::print(stderr, "replay_floor: {} {}: recorded {}, now {}\n", name(o.e.kind),
                       o.p1 != none ? p.paths[o.p1].full : "", o.e.result, r);
        }
      }
      for (uint32_t k = 0; k < o.released_count; ++k) {
        const int f = real[p.released[o.released + k]].exchange(-1, std::memory_order_relaxed);
        if (f >= 0) ::close(f);
      }
      prog[self].advance();
    }
    forget_dirs();
  }
};

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; }

int floor_run(const std::string& trace_path, const std::string& target_dir) {
  trace_reader trace = or_throw(trace_reader::open(trace_path));
  target_root target = or_throw(target_root::open(target_dir));
  const data_source data(data_spec{});
  prepare_options popt;
  popt.privilege.owners = ::geteuid() == 0;  // as bench_replay_copy
  const prepare_result pr = or_throw(prepare_tree(trace, target, data, popt));
  if (pr.errors) fmt::print(stderr, "prepare: {} errors\n", pr.errors);
  if (!std::getenv("FSRR_BENCH_COLD")) bench::read_tree(target_dir);
  const std::string root = std::filesystem::canonical(target_dir).string();
  const plan p = make_plan(trace, root == "/" ? "" : root, data);
  std::vector<std::atomic<int>> real(p.handles + 1);
  for (auto& r : real) r.store(-1);
  std::vector<progress_counter> prog(p.ops.size());
  const std::atomic<bool> stop{false};
  std::vector<runner> runners;
  runners.reserve(p.ops.size());
  for (uint32_t t = 0; t < p.ops.size(); ++t) runners.push_back(runner{p, real, prog, stop, t});
  rusage r0, r1;
  timespec w0, w1;
  ::getrusage(RUSAGE_SELF, &r0);
  ::clock_gettime(CLOCK_MONOTONIC, &w0);
  {
    std::vector<std::jthread> threads;
    for (runner& r : runners) threads.emplace_back([&r] { r.run(); });
  }
  ::clock_gettime(CLOCK_MONOTONIC, &w1);
  ::getrusage(RUSAGE_SELF, &r1);
  for (auto& r : real)
    if (const int f = r.load(); f >= 0) ::close(f);
  uint64_t ops = 0, differing = 0;
  for (const runner& r : runners) differing += r.differing;
  for (const auto& v : p.ops)
    for (const floor_op& o : v) ops += o.e.kind != op::exit;
  const double wall = static_cast<double>(w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) / 1e9;
  const double user = seconds(r1.ru_utime) - seconds(r0.ru_utime);
  const double sys_s = seconds(r1.ru_stime) - seconds(r0.ru_stime);
  fmt::print("{:.6f} {:.6f} {:.6f} {} {} {:.6f}\n", wall, user, sys_s, ops, differing, user + sys_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fmt::print(stderr, "usage: replay_floor TRACE TARGET\n");
    return 2;
  }
  try {
    return floor_run(argv[1], argv[2]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "replay_floor: {}\n", e.what());
    return 1;
  }
}
