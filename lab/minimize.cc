#include "minimize.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "clock.h"
#include "closure.h"
#include "command.h"
#include "made_fs.h"
#include "replay.h"
#include "rewrite.h"
#include "trace_reader.h"

namespace fsrr::lab {
namespace {

// Runs argv with the two variables set, its output discarded; its exit status (128 + signal).
result<int> run_predicate(const std::vector<std::string>& argv, const std::string& target,
                          const std::string& report) {
  const command_result r = run_command(
      argv, {.env = {{"FSRR_TARGET", target}, {"FSRR_REPORT", report}}, .keep_output = false});
  if (r.status < 0) return failure("cannot run {}: {}", argv.front(), std::strerror(errno));
  return r.status;
}

class minimizer {
 public:
  // The trace's threads and events in memory, and a scratch directory for the tries.
  static result<std::unique_ptr<minimizer>> open(const minimize_options& o) {
    result<trace_reader> in = trace_reader::open(o.trace);
    if (!in) return failure(in.error());
    std::unique_ptr<minimizer> m(new minimizer(o, std::move(*in)));
    m->threads_.resize(m->in_.thread_count() + 1);
    for (thread_id t = 1; t < m->threads_.size(); ++t) m->threads_[t] = m->in_.thread(t);
    auto events = m->in_.events();
    for (event e; events.next(e);) m->events_.push_back(e);
    FSRR_TRY(events.status());
    if (o.scratch.empty()) {
      char dir[] = "/dev/shm/fsrr-minimize.XXXXXX";
      if (!::mkdtemp(dir)) return failure("mkdtemp: {}", std::strerror(errno));
      m->scratch_ = dir;
      m->own_scratch_ = true;
    } else {
      m->scratch_ = o.scratch;
    }
    return m;
  }
  ~minimizer() {
    if (own_scratch_) {
      std::error_code ec;
      std::filesystem::remove_all(scratch_, ec);
    }
  }

  result<minimize_result> run() {
    const uint64_t t0 = monotonic_ns();
    minimize_result r;
    r.events_before = events_.size();
    r.tree_before = in_.tree().size();
    std::vector<bool> all(events_.size(), true);
    const result<int> whole = attempt(all, false);
    if (!whole) return failure(whole.error());
    if (*whole != 0)
      return failure(
          "the predicate does not hold on the whole trace (it exited with {}): nothing to "
          "minimize",
          *whole);
    best_ = all;
    // coarse to fine: who did it, which thread, on which file, which event
    for (int level = 0; level < 4 && !out_of_tries(); ++level) {
      std::map<uint64_t, std::vector<size_t>> groups;
      for (size_t i = 0; i < events_.size(); ++i) {
        if (!best_[i]) continue;
        const event& e = events_[i];
        const thread_info& t = threads_[e.thread < threads_.size() ? e.thread : 0];
        uint64_t key = i;
        if (level == 0)  // a process: (host, pid)
          key = uint64_t{t.host} << 32 | static_cast<uint32_t>(t.host_pid ? t.host_pid : t.pid);
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
      FSRR_TRY(ddmin(units));
    }
    // the initial tree, too, down to what the events name
    bool pruned = false;
    if (!out_of_tries()) {
      const result<int> status = attempt(best_, true);
      if (!status) return failure(status.error());
      pruned = *status == 0;
    }
    r.tries = tries_;
    r.exhausted = out_of_tries();
    r.events_after = std::count(best_.begin(), best_.end(), true);
    FSRR_TRY(write(best_, pruned, o_.out, o_.force));
    result<trace_reader> written = trace_reader::open(o_.out);
    if (!written) return failure(written.error());
    r.tree_after = written->tree().size();
    r.wall_ns = monotonic_ns() - t0;
    return r;
  }

 private:
  bool out_of_tries() const { return tries_ >= o_.max_tries; }
  void say(const std::string& line) const {
    if (o_.say) o_.say(line);
  }

  // Classic ddmin over `units`: a smaller set of them (with what they need) that still holds.
  // An error only when interrupted.
  result<void> ddmin(const std::vector<std::vector<size_t>>& units) {
    std::vector<size_t> c(units.size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = i;
    const auto test = [&](const std::vector<size_t>& subset) -> result<bool> {
      std::vector<bool> chosen(events_.size(), false);
      for (size_t u : subset)
        for (size_t i : units[u]) chosen[i] = true;
      const std::vector<bool> keep = transform::closure(in_, events_, threads_, chosen);
      const result<int> status = attempt(keep, false);
      if (!status) return failure(status.error());
      if (*status != 0) return false;
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
        const result<bool> holds = test(chunk);
        if (!holds) return failure(holds.error());
        if (*holds) {
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
        const result<bool> holds = test(rest);
        if (!holds) return failure(holds.error());
        if (*holds) {
          c = rest;
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
        }
      }
      if (reduced) continue;
      if (n >= c.size()) break;
      n = std::min(n * 2, c.size());
    }
    return {};
  }

  // The candidate as a trace: the original tree (or only what the events name, and the
  // directories on the way), the kept events.
  result<void> write(const std::vector<bool>& keep, bool prune, const std::string& path,
                     bool force) {
    header_info h = in_.header();
    h.derived = "minimize";
    auto created = transform::trace_rewriter::create(in_, path, h, force);
    if (!created) return failure(created.error());
    transform::trace_rewriter& w = *created;
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
    return w.finish();
  }

  // One try: the candidate written, replayed into a fresh target, the predicate asked; the
  // predicate's exit status, or 1 when the candidate could not even be replayed. An error
  // only when interrupted.
  result<int> attempt(const std::vector<bool>& keep, bool prune) {
    if (o_.cancel && o_.cancel->load()) return failure("interrupted");
    ++tries_;
    const std::string trace = fmt::format("{}/try{}.trace", scratch_, tries_);
    const std::string report = fmt::format("{}/try{}.json", scratch_, tries_);
    const result<int> tried = try_candidate(keep, prune, trace, report);
    ::unlink(trace.c_str());
    ::unlink(report.c_str());
    if (!tried && o_.cancel && o_.cancel->load()) return failure(tried.error());
    // a candidate that cannot be replayed does not show anything
    const int status = tried ? *tried : 1;
    const uint64_t n = std::count(keep.begin(), keep.end(), true);
    say(fmt::format("minimize: try {}: {} events: {}", tries_, n,
                    status == 0 ? "still holds" : "does not"));
    return status;
  }

  result<int> try_candidate(const std::vector<bool>& keep, bool prune, const std::string& trace,
                            const std::string& report) {
    FSRR_TRY(write(keep, prune, trace, true));
    std::unique_ptr<made_fs> fs;  // torn down when this returns
    std::string target;
    if (o_.fs) {
      result<std::unique_ptr<made_fs>> made = made_fs::make(*o_.fs, scratch_, 0);
      if (!made) return failure(made.error());
      fs = std::move(*made);
      target = fs->path();
    } else {
      target = fmt::format("{}/target{}", scratch_, tries_);
      if (::mkdir(target.c_str(), 0755) != 0)
        return failure("mkdir {}: {}", target, std::strerror(errno));
    }
    struct remove_target {  // a directory of its own goes, whatever happens
      const std::string& path;
      bool own;
      ~remove_target() {
        std::error_code ec;
        if (own) std::filesystem::remove_all(path, ec);
      }
    } cleanup{target, !o_.fs};
    {
      result<trace_reader> candidate = trace_reader::open(trace);
      if (!candidate) return failure(candidate.error());
      replay_options ro;
      ro.target = target;
      ro.timing = "afap";
      ro.cancel = o_.cancel;
      const result<replay_outcome> out = run_replay(*candidate, ro);
      if (!out) return failure(out.error());
      FSRR_TRY(write_report_json(out->report, report));
    }
    return run_predicate(o_.predicate, target, report);
  }

  minimizer(const minimize_options& o, trace_reader in) : o_(o), in_(std::move(in)) {}

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

result<minimize_result> minimize(const minimize_options& o) {
  if (o.predicate.empty()) return failure("no predicate: give one after --");
  if (o.fs && ::geteuid() != 0) return failure("--fs needs root (it makes file systems)");
  struct stat st;
  if (::stat(o.out.c_str(), &st) == 0 && !o.force)
    return failure("{} exists (--force to overwrite it)", o.out);
  result<std::unique_ptr<minimizer>> m = minimizer::open(o);
  if (!m) return failure(m.error());
  return (*m)->run();
}

}  // namespace fsrr::lab
