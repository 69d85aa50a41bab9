#include "minimize.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "closure.h"
#include "made_fs.h"
#include "replay.h"
#include "rewrite.h"
#include "trace_error.h"
#include "trace_reader.h"

namespace fsrr::lab {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Runs argv with the two variables set, its output discarded; its exit status (128 + signal).
int run_predicate(const std::vector<std::string>& argv, const std::string& target,
                  const std::string& report) {
  const pid_t pid = ::fork();
  if (pid < 0) throw trace_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::setenv("FSRR_TARGET", target.c_str(), 1);
    ::setenv("FSRR_REPORT", report.c_str(), 1);
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class minimizer {
 public:
  explicit minimizer(const minimize_options& o)
      : o_(o), in_(or_throw(trace_reader::open(o.trace))) {
    threads_.resize(in_.thread_count() + 1);
    for (thread_id t = 1; t < threads_.size(); ++t) threads_[t] = in_.thread(t);
    auto events = in_.events();
    for (event e; events.next(e);) events_.push_back(e);
    or_throw(events.status());
    if (o.scratch.empty()) {
      char dir[] = "/dev/shm/fsrr-minimize.XXXXXX";
      if (!::mkdtemp(dir)) throw trace_error(fmt::format("mkdtemp: {}", std::strerror(errno)));
      scratch_ = dir;
      own_scratch_ = true;
    } else {
      scratch_ = o.scratch;
    }
  }
  ~minimizer() {
    if (own_scratch_) {
      std::error_code ec;
      std::filesystem::remove_all(scratch_, ec);
    }
  }

  minimize_result run() {
    const uint64_t t0 = now_ns();
    minimize_result r;
    r.events_before = events_.size();
    r.tree_before = in_.tree().size();
    std::vector<bool> all(events_.size(), true);
    const int whole = attempt(all, false);
    if (whole != 0)
      throw trace_error(fmt::format(
          "the predicate does not hold on the whole trace (it exited with {}): nothing to "
          "minimize",
          whole));
    best_ = all;
    // coarse to fine: who did it, which thread, on which file, which event
    for (int level = 0; level < 4 && !out_of_tries(); ++level) {
      std::map<uint64_t, std::vector<size_t>> groups;
      for (size_t i = 0; i < events_.size(); ++i) {
        if (!best_[i]) continue;
        const event& e = events_[i];
        const thread_info& t = threads_[e.thread < threads_.size() ? e.thread : 0];
        uint64_t key = i;
        if (level == 0) key = static_cast<uint64_t>(static_cast<uint32_t>(t.host_pid ? t.host_pid : t.pid));
        if (level == 1) key = e.thread;
        if (level == 2)
          key = e.file ? uint64_t{1} << 40 | e.file
                : e.path ? uint64_t{2} << 40 | e.path
                         : uint64_t{3} << 40 | e.thread;
        groups[key].push_back(i);
      }
      std::vector<std::vector<size_t>> units;
      for (auto& [k, v] : groups) units.push_back(std::move(v));
      if (units.size() < 2) continue;
      say(fmt::format("minimize: {} {} to choose from", units.size(),
                      level == 0 ? "processes" : level == 1 ? "threads" : level == 2 ? "files" : "events"));
      ddmin(units);
    }
    // the initial tree, too, down to what the events name
    bool pruned = false;
    if (!out_of_tries()) pruned = attempt(best_, true) == 0;
    r.tries = tries_;
    r.exhausted = out_of_tries();
    r.events_after = std::count(best_.begin(), best_.end(), true);
    write(best_, pruned, o_.out, o_.force);
    r.tree_after = or_throw(trace_reader::open(o_.out)).tree().size();
    r.wall_ns = now_ns() - t0;
    return r;
  }

 private:
  bool out_of_tries() const { return tries_ >= o_.max_tries; }
  void say(const std::string& line) const {
    if (o_.say) o_.say(line);
  }

  // Classic ddmin over `units`: a smaller set of them (with what they need) that still holds.
  void ddmin(const std::vector<std::vector<size_t>>& units) {
    std::vector<size_t> c(units.size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = i;
    const auto test = [&](const std::vector<size_t>& subset) {
      std::vector<bool> chosen(events_.size(), false);
      for (size_t u : subset)
        for (size_t i : units[u]) chosen[i] = true;
      const std::vector<bool> keep = transform::closure(in_, events_, threads_, chosen);
      if (attempt(keep, false) != 0) return false;
      best_ = keep;
      return true;
    };
    size_t n = 2;
    while (c.size() >= 2 && !out_of_tries()) {
      std::vector<std::vector<size_t>> chunks(n);
      for (size_t i = 0; i < c.size(); ++i) chunks[i * n / c.size()].push_back(c[i]);
      bool reduced = false;
      for (const auto& chunk : chunks) {
        if (chunk.empty() || out_of_tries()) continue;
        if (test(chunk)) {
          c = chunk;
          n = 2;
          reduced = true;
          break;
        }
      }
      for (size_t k = 0; !reduced && n > 2 && k < chunks.size() && !out_of_tries(); ++k) {
        std::vector<size_t> rest;
        for (size_t j = 0; j < chunks.size(); ++j)
          if (j != k) rest.insert(rest.end(), chunks[j].begin(), chunks[j].end());
        if (test(rest)) {
          c = rest;
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
        }
      }
      if (reduced) continue;
      if (n >= c.size()) break;
      n = std::min(n * 2, c.size());
    }
  }

  // The candidate as a trace: the original tree (or only what the events name, and the
  // directories on the way), the kept events.
  void write(const std::vector<bool>& keep, bool prune, const std::string& path, bool force) {
    header_info h = in_.header();
    h.derived = "minimize";
    auto w = or_throw(transform::trace_rewriter::create(in_, path, h, force));
    std::vector<uint8_t> named;
    if (prune) {
      named.assign(in_.path_count() + 1, 0);
      const auto name = [&](path_id p) {
        for (; p != no_id && p < named.size() && !named[p]; p = in_.path(p).parent) named[p] = 1;
      };
      std::vector<thread_info> threads = threads_;
      fd_map fds(std::move(threads));
      fd_effect fx;
      for (size_t i = 0; i < events_.size(); ++i) {
        fds.apply(events_[i], fx);
        if (!keep[i]) continue;
        const event& e = events_[i];
        if (has(e.kind, F_PATH)) name(e.path);
        if (has(e.kind, F_PATH2)) name(e.path2);
        if (fx.h1) name(fds.handle(fx.h1).path);
        if (fx.h2) name(fds.handle(fx.h2).path);
      }
    }
    for (const tree_entry& t : in_.tree())
      if (!prune || (t.path < named.size() && named[t.path])) w.add_tree_entry(t);
    for (size_t i = 0; i < events_.size(); ++i)
      if (keep[i]) w.append(events_[i]);
    if (in_.summary().incomplete) w.writer().mark_incomplete(in_.summary().incomplete);
    or_throw(w.finish());
  }

  // One try: the candidate written, replayed into a fresh target, the predicate asked; the
  // predicate's exit status (or 1 when the candidate could not even be replayed).
  int attempt(const std::vector<bool>& keep, bool prune) {
    if (o_.cancel && o_.cancel->load()) throw trace_error("interrupted");
    ++tries_;
    const std::string trace = fmt::format("{}/try{}.trace", scratch_, tries_);
    const std::string report = fmt::format("{}/try{}.json", scratch_, tries_);
    const auto cleanup = [&] {
      ::unlink(trace.c_str());
      ::unlink(report.c_str());
    };
    int status = 1;
    try {
      write(keep, prune, trace, true);
      std::unique_ptr<made_fs> fs;
      std::string target;
      if (o_.fs) {
        fs = std::make_unique<made_fs>(*o_.fs, scratch_, 0);
        target = fs->path();
      } else {
        target = fmt::format("{}/target{}", scratch_, tries_);
        if (::mkdir(target.c_str(), 0755) != 0)
          throw trace_error(fmt::format("mkdir {}: {}", target, std::strerror(errno)));
      }
      {
        trace_reader candidate = or_throw(trace_reader::open(trace));
        replay_options ro;
        ro.target = target;
        ro.timing = "afap";
        ro.cancel = o_.cancel;
        const replay_outcome out = or_throw(run_replay(candidate, ro));
        or_throw(write_report_json(out.report, report));
      }
      status = run_predicate(o_.predicate, target, report);
      if (!o_.fs) {
        std::error_code ec;
        std::filesystem::remove_all(target, ec);
      }
    } catch (const trace_error& err) {
      if (o_.cancel && o_.cancel->load()) {
        cleanup();
        throw;
      }
      status = 1;  // a candidate that cannot be replayed does not show anything
    }
    cleanup();
    const uint64_t n = std::count(keep.begin(), keep.end(), true);
    say(fmt::format("minimize: try {}: {} events: {}", tries_, n,
                    status == 0 ? "still holds" : "does not"));
    return status;
  }

  const minimize_options& o_;
  trace_reader in_;
  std::vector<thread_info> threads_;
  std::vector<event> events_;
  std::vector<bool> best_;
  std::string scratch_;
  bool own_scratch_ = false;
  unsigned tries_ = 0;
};

}  // namespace

minimize_result minimize(const minimize_options& o) {
  if (o.predicate.empty()) throw trace_error("no predicate: give one after --");
  if (o.fs && ::geteuid() != 0) throw trace_error("--fs needs root (it makes file systems)");
  struct stat st;
  if (::stat(o.out.c_str(), &st) == 0 && !o.force)
    throw trace_error(fmt::format("{} exists (--force to overwrite it)", o.out));
  minimizer m(o);
  return m.run();
}

}  // namespace fsrr::lab
