// trace_compare ORIGINAL REPLAY TARGET: the round trip. REPLAY is a recording of
// `fsrr replay ORIGINAL TARGET`; for each recorded thread of ORIGINAL, how many of its
// replayable ops reappear, in order, in the replay thread that re-issued them, with the same
// syscall (legacy and *at forms count as one), file, offset, size and result.
// Replay threads are found by name ("fsrr-r<tid>"), or, for a one-thread trace, as the
// replay's busiest thread. Prints per-thread and overall match rates.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

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
    case op::open: case op::openat: case op::openat2: case op::creat: return "open";
    case op::stat: case op::lstat: case op::fstat: case op::newfstatat: case op::statx:
      return "stat";
    case op::mkdir: case op::mkdirat: return "mkdir";
    case op::rmdir: return "rmdir";
    case op::unlink: return "unlink";
    case op::unlinkat: return (e.flags & 0x200) ? "rmdir" : "unlink";  // AT_REMOVEDIR
    case op::rename: case op::renameat: case op::renameat2: return "rename";
    case op::link: case op::linkat: return "link";
    case op::symlink: case op::symlinkat: return "symlink";
    case op::readlink: case op::readlinkat: return "readlink";
    case op::access: case op::faccessat: case op::faccessat2: return "access";
    case op::chmod: case op::fchmod: case op::fchmodat: case op::fchmodat2: return "chmod";
    case op::chown: case op::lchown: case op::fchown: case op::fchownat: return "chown";
    case op::utime: case op::utimes: case op::futimesat: case op::utimensat: return "utimes";
    case op::truncate: case op::ftruncate: return "truncate";
    case op::getdents: case op::getdents64: return "getdents";
    case op::setxattr: case op::lsetxattr: case op::fsetxattr: return "setxattr";
    case op::getxattr: case op::lgetxattr: case op::fgetxattr: return "getxattr";
    case op::listxattr: case op::llistxattr: case op::flistxattr: return "listxattr";
    case op::removexattr: case op::lremovexattr: case op::fremovexattr: return "removexattr";
    default: return std::string(name(o));
  }
}

bool replayable(op o) {
  const op_class c = info(o).cls;
  return c != op_class::process && c != op_class::unreplayable && c != op_class::fd_table;
}

// Each thread's replayable ops as keys; fd ops get the path their fd was opened with.
std::map<thread_id, std::vector<op_key>> keys(trace_reader& r, const std::string& strip) {
  std::map<thread_id, std::vector<op_key>> out;
  std::unordered_map<uint64_t, std::string> fd_path;  // (pid, fd) -> path
  auto fd_key = [](int32_t pid, int32_t fd) { return uint64_t(uint32_t(pid)) << 32 | uint32_t(fd); };
  auto rel = [&](std::string p) {
    if (!strip.empty() && p.rfind(strip, 0) == 0) p = p.substr(strip.size());
    return p;
  };
  auto s = r.events();
  event e;
  while (s.next(e)) {
    const int32_t pid = r.thread(e.thread).pid;
    const op_class c = info(e.kind).cls;
    if ((c == op_class::open || e.kind == op::fd_bind) && e.path) {
      const int32_t fd = e.kind == op::fd_bind ? e.fd : static_cast<int32_t>(e.result);
      if (fd >= 0) fd_path[fd_key(pid, fd)] = rel(r.path_string(e.path));
    }
    if (!replayable(e.kind)) continue;
    op_key k;
    k.name = family(e.kind, e);
    if (has(e.kind, F_PATH) && e.path)
      k.path = rel(r.path_string(e.path));
    else if (has(e.kind, F_FD))
      if (auto it = fd_path.find(fd_key(pid, e.fd)); it != fd_path.end()) k.path = it->second;
    if (c == op_class::read || c == op_class::write || c == op_class::copy) {
      k.offset = e.offset;
      k.size = e.size;
    }
    // fd numbers differ between runs: an open matches by success or errno.
    k.result = c == op_class::open ? (e.result >= 0 ? 0 : e.result) : e.result;
    out[e.thread].push_back(std::move(k));
  }
  return out;
}

// Ops of `a` found in order in `b`: each op matches the first equal op of `b` after the
// previous match. The extra ops in `b` (the replayer's own start-up and prepare) come first
// and rarely equal a recorded op, so this greedy walk is close to the longest common
// subsequence here, at O(n log n).
size_t matched(const std::vector<op_key>& a, const std::vector<op_key>& b) {
  std::unordered_map<std::string, std::vector<size_t>> where;
  auto id = [](const op_key& k) {
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", k.name, k.path, k.offset, k.size, k.result);
  };
  for (size_t i = 0; i < b.size(); ++i) where[id(b[i])].push_back(i);
  size_t n = 0, j = 0;
  for (const op_key& k : a) {
    const auto it = where.find(id(k));
    if (it == where.end()) continue;
    const auto pos = std::lower_bound(it->second.begin(), it->second.end(), j);
    if (pos == it->second.end()) continue;
    ++n;
    j = *pos + 1;
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fmt::print(stderr, "usage: trace_compare ORIGINAL REPLAY TARGET\n");
    return 2;
  }
  trace_reader orig(argv[1]), rep(argv[2]);
  std::string target = argv[3];
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  const auto want = keys(orig, "");
  const auto got = keys(rep, target);
  // Replay threads by name.
  std::map<int32_t, thread_id> by_tid;
  thread_id busiest = no_id;
  for (const auto& [t, v] : got) {
    const std::string& comm = rep.string(rep.thread(t).comm);
    if (comm.rfind("fsrr-r", 0) == 0) by_tid[std::atoi(comm.c_str() + 6)] = t;
    if (busiest == no_id || v.size() > got.at(busiest).size()) busiest = t;
  }
  size_t total = 0, total_matched = 0;
  double worst = 1.0;
  for (const auto& [t, ops] : want) {
    const int32_t tid = orig.thread(t).tid;
    thread_id r = no_id;
    if (auto it = by_tid.find(tid); it != by_tid.end()) r = it->second;
    else if (want.size() == 1) r = busiest;
    const size_t m = r == no_id ? 0 : matched(ops, got.at(r));
    if (std::getenv("TRACE_COMPARE_DEBUG") && r != no_id) {
      const auto& b = got.at(r);
      for (size_t i = 0; i < 40; ++i)
        fmt::print("{:<60} | {}\n",
                   i < ops.size() ? fmt::format("{} {} @{} {} = {}", ops[i].name, ops[i].path, ops[i].offset, ops[i].size, ops[i].result) : "",
                   i < b.size() ? fmt::format("{} {} @{} {} = {}", b[i].name, b[i].path, b[i].offset, b[i].size, b[i].result) : "");
    }
    const double rate = ops.empty() ? 1.0 : double(m) / ops.size();
    worst = std::min(worst, rate);
    total += ops.size();
    total_matched += m;
    fmt::print("thread {:>7}: {:>8} of {:>8} ops match ({:.3f}%)\n", tid, m, ops.size(), 100 * rate);
  }
  fmt::print("all threads: {} of {} ops match ({:.3f}%); worst thread {:.3f}% (target >= 99.9%)\n",
             total_matched, total, total ? 100.0 * total_matched / total : 100.0, 100 * worst);
  return worst >= 0.999 ? 0 : 1;
}
