// trace_compare ORIGINAL REPLAY TARGET: the round trip. REPLAY is a recording of
// `fsrr replay ORIGINAL TARGET`; for each recorded thread of ORIGINAL, how many of its
// replayable ops reappear, in order, in the replay thread that re-issued them, with the same
// syscall (legacy and *at forms count as one), file, offset, size and result.
// Replay threads are found by name ("fsrr-r<tid>"), or, for a one-thread trace, as the
// replay's thread that matches it best. Prints per-thread and overall match rates.
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "trace_error.h"
#include "trace_reader.h"

using namespace fsrr;

namespace {

// One syscall, reduced to what the round trip compares.
struct op_key {
  std::string name, path;
  int64_t offset = 0;
  uint64_t size = 0;
  int64_t result = 0;
  bool operator==(const op_key&) const = default;
};

std::string family(op o, const event& e) {
  switch (o) {
    case op::open:
    case op::openat:
    case op::openat2:
    case op::creat:
      return "open";
    case op::stat:
    case op::lstat:
    case op::fstat:
    case op::newfstatat:
    case op::statx:
      return "stat";
    case op::mkdir:
    case op::mkdirat:
      return "mkdir";
    case op::rmdir:
      return "rmdir";
    case op::unlink:
      return "unlink";
    case op::unlinkat:
      return (e.flags & 0x200) ? "rmdir" : "unlink";  // AT_REMOVEDIR
    case op::rename:
    case op::renameat:
    case op::renameat2:
      return "rename";
    case op::link:
    case op::linkat:
      return "link";
    case op::symlink:
    case op::symlinkat:
      return "symlink";
    case op::readlink:
    case op::readlinkat:
      return "readlink";
    case op::access:
    case op::faccessat:
    case op::faccessat2:
      return "access";
    case op::chmod:
    case op::fchmod:
    case op::fchmodat:
    case op::fchmodat2:
      return "chmod";
    case op::chown:
    case op::lchown:
    case op::fchown:
    case op::fchownat:
      return "chown";
    case op::utime:
    case op::utimes:
    case op::futimesat:
    case op::utimensat:
      return "utimes";
    case op::truncate:
    case op::ftruncate:
      return "truncate";
    case op::getdents:
    case op::getdents64:
      return "getdents";
    case op::setxattr:
    case op::lsetxattr:
    case op::fsetxattr:
      return "setxattr";
    case op::getxattr:
    case op::lgetxattr:
    case op::fgetxattr:
      return "getxattr";
    case op::listxattr:
    case op::llistxattr:
    case op::flistxattr:
      return "listxattr";
    case op::removexattr:
    case op::lremovexattr:
    case op::fremovexattr:
      return "removexattr";
    default:
      return std::string(name(o));
  }
}

bool replayable(op o) {
  const op_class c = info(o).cls;
  return c != op_class::process && c != op_class::unreplayable && c != op_class::fd_table;
}

// Each thread's replayable ops as keys; fd ops get the path their fd was opened with.
std::map<thread_id, std::vector<op_key>> keys(trace_reader& r, const std::string& strip) {
  std::map<thread_id, std::vector<op_key>> out;
  // Each process's fds -> the path they were opened with; dup copies and fork inherits them.
  std::unordered_map<int32_t, std::unordered_map<int32_t, std::string>> fd_path;
  auto rel = [&](std::string p) {
    if (!strip.empty() && p.rfind(strip, 0) == 0 &&
        (p.size() == strip.size() || p[strip.size()] == '/'))
      p = p.size() == strip.size() ? "/" : p.substr(strip.size());
    return p;
  };
  // An open's fd appears when the call returns, while a close frees it as it starts: in a
  // process whose threads share fds, a close that entered after an open may still free the
  // number the open then takes. Events come in entry order, so opens take effect at their end.
  struct install {
    uint64_t at;
    int32_t pid, fd;
    std::string path;
    bool operator>(const install& o) const { return at > o.at; }
  };
  std::priority_queue<install, std::vector<install>, std::greater<>> pending;
  auto s = r.events();
  event e;
  while (s.next(e)) {
    while (!pending.empty() && pending.top().at <= e.ts) {
      fd_path[pending.top().pid][pending.top().fd] = pending.top().path;
      pending.pop();
    }
    const int32_t pid = r.thread(e.thread).pid;
    auto& fds = fd_path[pid];
    const op_class c = info(e.kind).cls;
    if ((c == op_class::open || e.kind == op::fd_bind) && e.path) {
      const int32_t fd = e.kind == op::fd_bind ? e.fd : static_cast<int32_t>(e.result);
      if (fd >= 0) pending.push({e.ts + e.dur, pid, fd, rel(r.path_string(e.path))});
    }
    const bool dup = e.kind == op::dup || e.kind == op::dup2 || e.kind == op::dup3 ||
                     (e.kind == op::fcntl && (e.aux == F_DUPFD || e.aux == F_DUPFD_CLOEXEC));
    if (dup && e.result >= 0 && e.result != e.fd) {
      if (auto it = fds.find(e.fd); it != fds.end())
        fds[static_cast<int32_t>(e.result)] = it->second;
      else
        fds.erase(static_cast<int32_t>(e.result));
    }
    const bool forks = e.kind == op::clone || e.kind == op::clone3 || e.kind == op::fork;
    if (forks && e.result > 0 && !(e.flags & CLONE_THREAD)) {
      auto copy = fds;  // fd_path[] may rehash
      fd_path[static_cast<int32_t>(e.result)] = std::move(copy);
    }
    if (!replayable(e.kind)) continue;
    op_key k;
    k.name = family(e.kind, e);
    if (has(e.kind, F_PATH) && e.path)
      k.path = rel(r.path_string(e.path));
    else if (has(e.kind, F_FD))
      if (auto it = fds.find(e.fd); it != fds.end()) k.path = it->second;
    if (c == op_class::read || c == op_class::write || c == op_class::copy) {
      k.offset = e.offset;
      k.size = e.size;
    }
    // fd numbers differ between runs: an open matches by success or errno.
    k.result = c == op_class::open ? (e.result >= 0 ? 0 : e.result) : e.result;
    out[e.thread].push_back(std::move(k));
    if (e.kind == op::close && e.result == 0) fds.erase(e.fd);
  }
  or_throw(s.status());
  return out;
}

std::string describe(const op_key& k) {
  return fmt::format("{} {} @{} {} = {}", k.name, k.path, k.offset, k.size, k.result);
}

// Ops of `a` found in order in `b`: each op matches the first equal op of `b` after the
// previous match. The extra ops in `b` (the replayer's own start-up and prepare) come first
// and rarely equal a recorded op, so this greedy walk is close to the longest common
// subsequence here, at O(n log n). A match far ahead must be confirmed by the next ops of
// `a`, or one op without its counterpart (a close the replay had no reason to issue) would
// match one at the very end and leave everything between unmatched. With `show`, the first
// ops of `a` without a match are printed next to the op of `b` the walk had reached.
size_t matched(const std::vector<op_key>& a, const std::vector<op_key>& b, size_t show = 0) {
  constexpr size_t near = 64, confirm = 8;
  std::unordered_map<std::string, std::vector<size_t>> where;
  auto id = [](const op_key& k) {
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", k.name, k.path, k.offset, k.size, k.result);
  };
  std::vector<std::string> ids(a.size());
  for (size_t i = 0; i < a.size(); ++i) ids[i] = id(a[i]);
  for (size_t i = 0; i < b.size(); ++i) where[id(b[i])].push_back(i);
  // The first op of `b` at or after `from` equal to a[i]; b.size() if none.
  auto find = [&](size_t i, size_t from) {
    const auto it = where.find(ids[i]);
    if (it == where.end()) return b.size();
    const auto pos = std::lower_bound(it->second.begin(), it->second.end(), from);
    return pos == it->second.end() ? b.size() : *pos;
  };
  size_t n = 0, j = 0, shown = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    size_t pos = find(i, j);
    if (pos < b.size() && pos > j + near && n > 0) {
      size_t at = pos + 1, ok = 0, tried = 0;
      for (size_t k = i + 1; k < a.size() && tried < confirm; ++k, ++tried) {
        const size_t next = find(k, at);
        if (next < b.size() && next <= at + near) {
          ++ok;
          at = next + 1;
        }
      }
      if (ok * 2 < tried) pos = b.size();
    }
    if (pos == b.size()) {
      if (shown++ < show)
        fmt::print("  unmatched #{}: {:<60} | replay #{}: {}\n", i, describe(a[i]), j,
                   j < b.size() ? describe(b[j]) : "(end)");
      continue;
    }
    ++n;
    j = pos + 1;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fmt::print(stderr, "usage: trace_compare ORIGINAL REPLAY TARGET\n");
    return 2;
  }
  trace_reader orig = or_throw(trace_reader::open(argv[1]));
  trace_reader rep = or_throw(trace_reader::open(argv[2]));
  // The recording holds canonical absolute paths; the target may be gone by now.
  std::string target = argv[3];
  if (char* real = ::realpath(argv[3], nullptr)) {
    target = real;
    ::free(real);
  } else if (target.front() != '/') {
    target = std::filesystem::current_path().string() + "/" + target;
  }
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  const auto want = keys(orig, "");
  const auto got = keys(rep, target);
  // Replay threads by name.
  std::map<int32_t, thread_id> by_tid;
  for (const auto& [t, v] : got) {
    const std::string& comm = rep.string(rep.thread(t).comm);
    if (comm.rfind("fsrr-r", 0) == 0) by_tid[std::atoi(comm.c_str() + 6)] = t;
  }
  size_t total = 0, total_matched = 0;
  double worst = 1.0;
  for (const auto& [t, ops] : want) {
    const int32_t tid = orig.thread(t).tid;
    thread_id r = no_id;
    size_t m = 0;
    if (auto it = by_tid.find(tid); it != by_tid.end()) {
      r = it->second;
      m = matched(ops, got.at(r));
    } else if (want.size() == 1) {  // the replay ran it on a thread of its own choosing
      for (const auto& [t, v] : got)
        if (const size_t n = matched(ops, v); r == no_id || n > m) {
          r = t;
          m = n;
        }
    }
    if (const char* debug = std::getenv("TRACE_COMPARE_DEBUG"); debug && r != no_id)
      matched(ops, got.at(r), std::max(1, std::atoi(debug)) * 20);
    const double rate = ops.empty() ? 1.0 : double(m) / ops.size();
    worst = std::min(worst, rate);
    total += ops.size();
    total_matched += m;
    fmt::print("thread {:>7}: {:>8} of {:>8} ops match ({:.3f}%)\n", tid, m, ops.size(),
               100 * rate);
  }
  fmt::print("all threads: {} of {} ops match ({:.3f}%); worst thread {:.3f}% (target >= 99.9%)\n",
             total_matched, total, total ? 100.0 * total_matched / total : 100.0, 100 * worst);
  return worst >= 0.999 ? 0 : 1;
}
