#include "mpi_replay.h"

#include <mpi.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "rank_beacon.h"
#include "rank_link.h"
#include "rank_plan.h"
#include "schedule.h"
#include "stats_wire.h"
#include "trace_reader.h"

namespace fsrr::mpi {
namespace {

struct peer {
  char host[64] = {};
  int32_t pid = 0;
};

struct failed {
  int rank;
  std::string why;
};

// Every rank says whether its step went well; a failure anywhere ends the job on every rank,
// with the lowest failing rank's message.
std::optional<failed> agree(MPI_Comm comm, int rank, const result<void>& step) {
  const int mine = step ? INT_MAX : rank;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return std::nullopt;
  std::string why = rank == first ? step.error().message : std::string();
  int len = static_cast<int>(why.size());
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  why.resize(static_cast<size_t>(len));
  MPI_Bcast(why.data(), len, MPI_CHAR, first, comm);
  return failed{first, why};
}

// Watches the ranks: one that ends before the job does (kill -9, a crash) is named at once in
// one line, and every survivor exits 1 — nothing of the job is left waiting on a peer that will
// never answer (mpirun would tear the job down too, but silently). Rank 0 names every rank
// linked to it (rank_beacon: a connection whose end without a goodbye is a death, wherever the
// rank ran, also alone on its node); the ranks of a node watch each other with pidfds, to end
// at once when one of them dies, and the lowest survivor there names rank 0 and any rank not
// linked. A rank that leaves on purpose (this watcher's own exit, an MPI_Abort) first marks
// itself in memory the ranks of a node share and says goodbye to rank 0, so that the others do
// not take it for one that died: only the rank that really died is named, and only once.
class peer_watch {
 public:
  // Collective.
  peer_watch(MPI_Comm comm, int rank, const std::vector<peer>& peers) : rank_(rank), peers_(peers) {
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    // FSRR_TEST_RANK_NODES=own (rank 0's environment says, for all): no rank watches a peer
    // of its node, as if each ran on a host of its own (the tests' way to have a rank alone on
    // its node on one machine). The ranks still count the node's ranks for the CPUs they share.
    const char* test_nodes = rank == 0 ? std::getenv("FSRR_TEST_RANK_NODES") : nullptr;
    int alone = test_nodes && std::string_view(test_nodes) == "own" ? 1 : 0;
    if (alone)
      fmt::print(stderr, "rank 0: FSRR_TEST_RANK_NODES=own: no rank watches a peer of its node\n");
    MPI_Bcast(&alone, 1, MPI_INT, 0, comm);
    int node_rank = 0;
    MPI_Comm_rank(node, &node_rank);
    const MPI_Aint bytes = node_rank == 0 ? static_cast<MPI_Aint>(peers.size()) : 0;
    void* base = nullptr;
    if (MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node, &base, &win_) == MPI_SUCCESS) {
      MPI_Aint size = 0;
      int unit = 1;
      MPI_Win_shared_query(win_, 0, &size, &unit, &base);
      if (size >= static_cast<MPI_Aint>(peers.size())) leaving_ = static_cast<uint8_t*>(base);
      if (leaving_ && node_rank == 0) std::fill(leaving_, leaving_ + peers.size(), 0);
    }
    // The ranks of this node as MPI knows them (a host name can repeat across nodes, and a
    // pid of another node may name an unrelated process here).
    int here = 1;
    MPI_Comm_size(node, &here);
    std::vector<int> ranks(static_cast<size_t>(here));
    MPI_Allgather(&rank, 1, MPI_INT, ranks.data(), 1, MPI_INT, node);
    MPI_Barrier(node);
    MPI_Comm_free(&node);
    ranks_here_ = here;
    for (const int r : ranks) {
      if (alone || r == rank || r < 0 || static_cast<size_t>(r) >= peers.size()) continue;
      const int fd = static_cast<int>(::syscall(SYS_pidfd_open, peers[r].pid, 0));
      if (fd >= 0) watched_.push_back({r, fd, false});
    }
    beacon_ = rank_beacon::open(comm, rank, static_cast<int>(peers.size()));
    if (rank == 0)
      for (size_t r = 1; r < beacon_.fds().size(); ++r)
        if (beacon_.fds()[r] >= 0) watched_.push_back({static_cast<int>(r), beacon_.fds()[r], true});
    if (!watched_.empty()) thread_ = std::thread(&peer_watch::run, this);
  }
  ~peer_watch() { stop(); }
  // Collective (the shared memory is freed).
  void stop() {
    quit_.store(true);
    if (thread_.joinable()) thread_.join();
    for (const auto& w : watched_)
      if (!w.link) ::close(w.fd);  // the beacon's are the beacon's
    watched_.clear();
    if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
    leaving_ = nullptr;
  }
  void phase(const char* p) { phase_.store(p); }
  int ranks_here() const { return ranks_here_; }
  // This rank goes on purpose: not a death for the others to report. At the job's end, or
  // (aborting) because the job fails: then rank 0 names no rank that mpirun ends after it.
  void leaving() {
    mark(rank_);
    beacon_.goodbye();
  }
  void aborting() {
    mark(rank_);
    beacon_.ending();
  }

 private:
  struct watched {
    int rank, fd;
    bool link;  // rank 0's connection to it (else a pidfd of a rank on this node)
    std::string pending = {};  // a word cut in two between reads
  };
  void mark(int r) {
    if (leaving_) __atomic_store_n(&leaving_[r], uint8_t{1}, __ATOMIC_SEQ_CST);
  }
  bool left(int r) const { return leaving_ && __atomic_load_n(&leaving_[r], __ATOMIC_SEQ_CST); }
  void run() {
    std::vector<pollfd> fds;
    for (const auto& w : watched_) fds.push_back({w.fd, POLLIN, 0});
    std::vector<bool> went(peers_.size(), false);  // said a word before going: no death
    bool job_ending = false;  // a rank aborted: those mpirun ends after it are not deaths
    while (!quit_.load()) {
      if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
      if (quit_.load()) return;
      // Words first, then ends: a rank that said it goes (or which peer died) is no death,
      // whatever order poll lists them in. A death a peer named beats a bare end (a survivor
      // mpirun ended before its word left).
      int named = -1, dead = -1;
      bool unreachable = false;
      std::vector<std::pair<int, bool>> ends;  // (rank, cut off)
      for (size_t i = 0; i < fds.size(); ++i) {
        if (!fds[i].revents || fds[i].fd < 0) continue;
        watched& w = watched_[i];
        const auto r = static_cast<size_t>(w.rank);
        if (!w.link) {  // a rank of this node ended
          fds[i].fd = -1;  // poll no more
          ends.emplace_back(w.rank, false);
          continue;
        }
        const rank_beacon::news n = rank_beacon::read(w.fd, w.pending);
        switch (n.what) {
          case rank_beacon::news::none:
            break;
          case rank_beacon::news::left:
            went[r] = true;
            break;
          case rank_beacon::news::ending:
            went[r] = true;
            job_ending = true;
            break;
          case rank_beacon::news::saw_death:  // a peer of its node died; it goes
            went[r] = true;
            if (n.rank >= 0 && static_cast<size_t>(n.rank) < went.size() && n.rank != rank_ &&
                (named < 0 || n.rank < named))
              named = n.rank;
            break;
          case rank_beacon::news::died:
          case rank_beacon::news::unreachable:
            fds[i].fd = -1;
            ends.emplace_back(w.rank, n.what == rank_beacon::news::unreachable);
            break;
        }
      }
      if (job_ending) continue;  // a rank aborted: mpirun ends the rest, its line is said
      if (named >= 0 && !went[static_cast<size_t>(named)] && !left(named)) {
        dead = named;
      } else {
        for (const auto& [r, cut_off] : ends)
          if (!went[static_cast<size_t>(r)] && !left(r) && (dead < 0 || r < dead))
            dead = r, unreachable = cut_off;
      }
      if (dead < 0) continue;  // gone on purpose: its own line, if any, is said
      // Rank 0 names a rank linked to it (a rank of the dead one's node tells it, if the
      // death's own word is slower); else the lowest rank here that did not die. The others
      // only go.
      int speaker = rank_;
      const bool linked = beacon_.linked()[static_cast<size_t>(dead)];
      if (linked) {
        speaker = 0;
      } else {
        for (const auto& w : watched_)
          if (!w.link && w.rank < speaker && w.rank != dead && !dead_or_gone_unmarked(w))
            speaker = w.rank;
      }
      mark(rank_);
      if (speaker == rank_) {
        std::fflush(stdout);
        const peer& p = peers_[static_cast<size_t>(dead)];
        if (unreachable)
          fmt::print(stderr,
                     "fsrr: rank {}: stopped answering {} (pid {} on {}: its node is down or "
                     "cut off)\n",
                     dead, phase_.load(), p.pid, p.host);
        else
          fmt::print(stderr,
                     "fsrr: rank {}: ended {} without a word (pid {} on {}: killed or "
                     "crashed)\n",
                     dead, phase_.load(), p.pid, p.host);
        std::fflush(stderr);
      }
      if (rank_ != 0) {
        if (linked || speaker == 0)
          beacon_.saw_death(dead);  // for rank 0 to name
        else
          beacon_.ending();  // named here: rank 0 names no rank mpirun ends now
      }
      ::_exit(1);
    }
  }
  // A rank here that is gone without marking itself: dead too, it cannot speak.
  bool dead_or_gone_unmarked(const watched& w) const {
    pollfd p{w.fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && !left(w.rank);
  }
  int rank_;
  std::vector<peer> peers_;
  std::vector<watched> watched_;
  std::thread thread_;
  std::atomic<bool> quit_{false};
  std::atomic<const char*> phase_{"before the replay"};
  int ranks_here_ = 1;
  MPI_Win win_ = MPI_WIN_NULL;
  uint8_t* leaving_ = nullptr;  // by rank, in memory the ranks of this host share
  rank_beacon beacon_;
};

// Every rank's bytes to rank 0 (empty elsewhere).
std::vector<std::vector<uint8_t>> gather(MPI_Comm comm, int rank, int size,
                                         const std::vector<uint8_t>& mine) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<size_t>(size)), at(static_cast<size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm);
  std::vector<uint8_t> all;
  if (rank == 0) {
    size_t total = 0;
    for (int r = 0; r < size; ++r) {
      at[static_cast<size_t>(r)] = static_cast<int>(total);
      total += static_cast<size_t>(lens[static_cast<size_t>(r)]);
    }
    all.resize(total);
  }
  MPI_Gatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), at.data(), MPI_BYTE, 0, comm);
  std::vector<std::vector<uint8_t>> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r) {
      const auto b = all.begin() + at[static_cast<size_t>(r)];
      out.emplace_back(b, b + lens[static_cast<size_t>(r)]);
    }
  return out;
}

std::string host_name() {
  char h[64] = {};
  ::gethostname(h, sizeof h - 1);
  return h;
}

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t peak_rss_bytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

int usable_cpus() {
  cpu_set_t cpus;
  return ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
}

// A rank's backend: it issues its share of the threads, settles the others' ops as their ranks
// report them (rank_link), and starts at the instant all the ranks start at.
class rank_backend final : public replay_backend {
 public:
  rank_backend(replay_peers& peers, long ranks_here) : peers_(peers), ranks_here_(ranks_here) {}
  replay_stats run(trace_reader& trace, const target_root& target, const data_source& data,
                   engine_options options) override {
    options.peers = &peers_;
    // Ranks outnumber the CPUs here: one spinning for the start keeps the others from it.
    if (ranks_here_ > ::sysconf(_SC_NPROCESSORS_ONLN)) options.start_spin_ns = 0;
    // A rank's threads would take CPUs another rank's threads here spin on for free ones.
    options.spread = ranks_here_ == 1;
    return replay_events(trace, target, data, options, choose_loop(trace, options));
  }
  void run_nothing() override { peers_.start_instant(); }

 private:
  replay_peers& peers_;
  long ranks_here_;
};

// A failure all the ranks know of: rank 0 names it, the others end without a word — but not
// before it has: mpirun tears the job down at the first rank that exits non-zero, and a rank 0
// still on its way to main's error line would be killed with the line unsaid.
tl::unexpected<error> ranks_failed(MPI_Comm comm, int rank, const failed& f) {
  if (rank == 0) {
    std::fflush(stdout);
    fmt::print(stderr, "fsrr: rank {}: {}\n", f.rank, f.why);
    std::fflush(stderr);
  }
  MPI_Barrier(comm);
  return told_elsewhere();
}

// Rank 0's report from every rank's results: a row each, their stats merged, the start skew,
// and the first failure, if any.
std::optional<failed> merge_ranks(const std::vector<std::vector<uint8_t>>& all,
                                  replay_report& rep, bool strict) {
  std::optional<failed> first_failure;
  const flow_stats flow = rep.replay.flow;  // every rank models the whole data flow
  replay_stats total;
  total.timed = rep.replay.timed;
  uint64_t first_start = UINT64_MAX, last_start = 0;
  for (const auto& bytes : all) {
    auto r = from_wire(bytes);
    if (!r) {
      first_failure = failed{0, r.error().message};
      continue;
    }
    replay_stats& s = r->stats;
    if (!s.stopped.empty() && !first_failure) first_failure = failed{r->rank, s.stopped};
    rank_report row;
    row.rank = r->rank;
    row.host = r->host;
    row.idle = r->idle;
    row.events = s.events;
    row.threads = s.threads;
    row.backend = s.backend;
    row.wall_ns = s.wall_ns;
    row.clock_offset_ns = r->clock_offset_ns;
    row.lateness = s.lateness;
    row.remote_waits = s.remote_waits;
    row.recorded_hosts = r->recorded_hosts;
    row.open_ns = r->open_ns;
    row.plan_ns = r->plan_ns;
    row.peak_rss_bytes = r->peak_rss_bytes;
    rep.ranks.push_back(row);
    // The start instants as measured, on rank 0's clock.
    if (s.started_ns) {
      const auto at =
          static_cast<uint64_t>(static_cast<int64_t>(s.started_ns) - r->clock_offset_ns);
      first_start = std::min(first_start, at);
      last_start = std::max(last_start, at);
    }
    const uint64_t wall = s.wall_ns;
    s.stopped.clear();
    total.merge(s, strict ? 1 : 10);
    total.threads += s.threads;
    total.wall_ns = std::max(total.wall_ns, wall);
  }
  total.flow = flow;
  total.backend = "mpi";
  total.stopped = first_failure
                      ? fmt::format("rank {}: {}", first_failure->rank, first_failure->why)
                      : std::string();
  rep.start_skew_ns =
      first_start <= last_start ? static_cast<int64_t>(last_start - first_start) : 0;
  rep.replay = std::move(total);
  return first_failure;
}

// The job on one rank, between MPI_Init and the end: its exit status, or the failure that
// ended all the ranks.
result<int> job(MPI_Comm comm, int rank, int size, const std::string& trace_path,
                replay_options options, const std::string& report, peer_watch& watch) {
  auto say_failed = [&](const failed& f) { return ranks_failed(comm, rank, f); };
  // Every rank reads the trace's tables; rank 0 alone works out the plan (two passes over the
  // events) and hands it to the others. A trace one rank cannot read stops all.
  std::optional<trace_reader> trace;
  std::optional<rank_plan> plan;
  const uint64_t began = monotonic_ns();
  uint64_t opened_at = began;
  result<void> step = [&]() -> result<void> {
    // Refused on any rank: refused on all, before rank 0 builds the tree.
    if (options.realtime && options.timing != "afap") FSRR_TRY(realtime_allowed());
    auto t = trace_reader::open(trace_path);
    if (!t) return tl::unexpected(t.error());
    trace.emplace(std::move(*t));
    opened_at = monotonic_ns();
    if (rank == 0) {
      auto p = rank_plan::make(*trace, size);
      if (!p) return tl::unexpected(p.error());
      plan.emplace(std::move(*p));
    }
    return {};
  }();
  if (auto f = agree(comm, rank, step)) return say_failed(*f);
  {
    std::vector<uint8_t> bytes = rank == 0 ? plan->to_bytes(*trace) : std::vector<uint8_t>();
    uint64_t len = bytes.size();
    MPI_Bcast(&len, 1, MPI_UINT64_T, 0, comm);
    bytes.resize(len);
    for (uint64_t at = 0; at < len;) {  // MPI counts in int
      const int n = static_cast<int>(std::min<uint64_t>(len - at, 1u << 30));
      MPI_Bcast(bytes.data() + at, n, MPI_BYTE, 0, comm);
      at += static_cast<uint64_t>(n);
    }
    step = {};
    if (rank != 0) {
      auto p = rank_plan::from_bytes(bytes, *trace, size);
      if (p)
        plan.emplace(std::move(*p));
      else
        step = tl::unexpected(p.error());
    }
    if (auto f = agree(comm, rank, step)) return say_failed(*f);
  }
  const uint64_t planned_at = monotonic_ns();

  const rank_share& mine = plan->share(rank);
  const bool idle = mine.threads == 0;
  if (idle) {
    uint32_t groups = 0;
    for (int r = 0; r < size; ++r) groups += plan->share(r).groups;
    fmt::print(stderr, "rank {}: idle: the trace's {} process group{} went to other ranks\n", rank,
               groups, groups == 1 ? "" : "s");
  }

  // mpirun binds each rank to one core by default (up to 2 ranks): a rank's replay threads
  // then take turns on it. Each rank so bound says so, when it has several to replay.
  if (!idle && mine.threads > 1 && usable_cpus() == 1 && ::sysconf(_SC_NPROCESSORS_ONLN) > 1)
    fmt::print(stderr,
               "rank {}: bound to 1 CPU by mpirun: its {} replay threads share it (mpirun "
               "--bind-to none lets them spread)\n",
               rank, mine.threads);

  rank_link link(comm, rank, *plan, trace->thread_count());
  options.progress = false;  // N progress lines on one terminal help nobody
  // The tree is one shared namespace: rank 0 alone builds it, the others wait until it is
  // whole (each building it, or a share of it, would race over the same names and
  // directories); a rank that cannot open the target or build the tree stops all.
  auto opened = replay_job::open(*trace, options, {.tree_elsewhere = rank != 0});
  step = opened ? (rank == 0 ? opened->prepare() : result<void>{}) : failure(opened.error());
  if (auto f = agree(comm, rank, step)) return say_failed(*f);
  watch.phase("during the replay");
  rank_backend backend(link, watch.ranks_here());
  replay_outcome outcome = opened->run(backend);
  watch.phase("after the replay");

  rank_result me;
  me.rank = rank;
  me.host = host_name();
  me.idle = idle;
  me.clock_offset_ns = link.clock_offset();
  me.recorded_hosts = mine.hosts;
  me.open_ns = opened_at - began;
  me.plan_ns = planned_at - opened_at;
  me.peak_rss_bytes = peak_rss_bytes();
  me.stats = outcome.report.replay;
  me.stats.first_mismatches.resize(std::min<size_t>(me.stats.first_mismatches.size(), 10));
  // What stopped this rank, if it stopped on its own: rank 0 names the first such.
  std::string own = link.own_stop();
  if (own.empty() && outcome.report.prepare.errors)
    own = fmt::format("prepare: {} errors", outcome.report.prepare.errors);
  me.stats.stopped = own;
  const auto all = gather(comm, rank, size, to_wire(me));
  int status = 0;
  std::optional<failed> first_failure;
  if (rank == 0) {
    replay_outcome& out = outcome;
    replay_report& rep = out.report;
    rep.trace = trace_path;
    first_failure = merge_ranks(all, rep, options.strict);
    fmt::print("{}", format_outcome(out));
    std::fflush(stdout);
    if (!report.empty())
      if (auto w = write_report_json(rep, report); !w) {
        if (first_failure) {  // both said: the report's line first
          std::fflush(stdout);
          fmt::print(stderr, "fsrr: rank 0: {}\n", w.error().message);
        } else {
          first_failure = failed{0, w.error().message};
        }
      }
    status = first_failure ? 1 : 0;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  if (!status) return 0;
  return say_failed(rank == 0 ? *first_failure : failed{});
}

}  // namespace

result<int> replay(const std::string& trace_path, replay_options options,
                   const std::string& report) {
  int provided = 0;
  // The link thread makes the only MPI calls while the replay runs, the calling thread the
  // others: serialized would do, multiple is asked for so that no library lock is skipped.
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return failure("MPI_Init failed: run under mpirun");
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    if (rank != 0) return told_elsewhere();
    return failure("rank 0: this MPI library gives no thread support (needs "
                   "MPI_THREAD_SERIALIZED)");
  }
  peer me;
  std::snprintf(me.host, sizeof me.host, "%s", host_name().c_str());
  me.pid = static_cast<int32_t>(::getpid());
  std::vector<peer> peers(static_cast<size_t>(size));
  MPI_Allgather(&me, sizeof me, MPI_BYTE, peers.data(), sizeof me, MPI_BYTE, comm);
  result<int> status = 1;
  {
    peer_watch watch(comm, rank, peers);
    try {
      status = job(comm, rank, size, trace_path, std::move(options), report, watch);
    } catch (const std::exception& e) {
      // Past the point where the ranks can agree: this rank cannot go on, and the others
      // would wait for it forever. MPI_Abort ends them all; the line says why.
      std::fflush(stdout);
      fmt::print(stderr, "fsrr: rank {}: {}\n", rank, e.what());
      std::fflush(stderr);
      watch.aborting();
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    // A rank that leaves must not look dead to a peer still watching: everyone stops watching
    // before anyone goes.
    MPI_Barrier(comm);
    watch.leaving();
    watch.stop();
    MPI_Barrier(comm);
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return status;
}

}  // namespace fsrr::mpi
