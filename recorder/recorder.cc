#include "recorder.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "clock.h"
#include "decoder.h"
#include "drain.h"
#include "fsrr.h"
#include "host_header.h"
#include "launcher.h"
#include "pause.h"
#include "probes.h"
#include "trace_writer.h"
#include "tree_snapshot.h"

#ifdef FSRR_SANITIZED
#include <sanitizer/lsan_interface.h>
#endif

namespace fsrr::recorder {
namespace {

constexpr int poll_ms = 10;                           // decoder looks at least this often
constexpr uint64_t clock_pair_ns = 5'000'000'000ull;  // realtime calibration
constexpr uint64_t grace_ns = 2'000'000'000ull;       // after forwarding a stop signal

header_info make_header(const record_options& o) {
  std::vector<std::string> what = o.command;
  if (what.empty()) {
    if (o.all) what.push_back("--all");
    if (!o.cgroup.empty()) what.push_back("--cgroup=" + o.cgroup);
    for (pid_t p : o.pids) what.push_back(fmt::format("--pid={}", p));
  }
  return host_header(trace_kind::recording, what);
}

// The cgroup v2 directory --cgroup names: a path, or one relative to the cgroup2 mount
// ("system.slice/nginx.service").
result<int> open_cgroup(const std::string& name) {
  std::string path = name;
  if (name.empty() || name[0] != '/') {
    std::ifstream mounts("/proc/self/mountinfo");
    std::string line, mount_point;
    while (std::getline(mounts, line))
      if (line.find(" - cgroup2 ") != std::string::npos) {
        std::istringstream f(line);
        std::string id, parent, dev, root;
        f >> id >> parent >> dev >> root >> mount_point;
        break;
      }
    if (mount_point.empty()) return failure("--cgroup: no cgroup2 file system is mounted");
    path = mount_point + "/" + name;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct statfs fs {};
  if (fd < 0 || ::fstatfs(fd, &fs) != 0 || fs.f_type != 0x63677270 /* CGROUP2_SUPER_MAGIC */) {
    const int err = fd < 0 ? errno : ENOTDIR;
    if (fd >= 0) ::close(fd);
    return failure("--cgroup {}: {}", path,
                   err == ENOTDIR ? "not a cgroup v2 directory" : std::strerror(err));
  }
  return fd;
}

// Whether the cgroup `fd` has processes (cgroup.events' "populated").
bool populated(int cgroup_fd) {
  const int fd = ::openat(cgroup_fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  return std::strstr(buf, "populated 1") != nullptr;
}

// --path: each one canonical, and the mount and inode the programs know it by.
struct kept_paths {
  std::vector<std::string> paths;
  std::vector<std::pair<uint32_t, uint64_t>> inodes;  // mnt_id, ino
};
result<kept_paths> resolve_kept(const std::vector<std::string>& paths) {
  if (paths.size() > FSRR_PATHS)
    return failure("at most {} --path (got {})", FSRR_PATHS, paths.size());
  kept_paths k;
  for (const std::string& p : paths) {
    char real[PATH_MAX];
    struct statx sx {};
    if (!::realpath(p.c_str(), real) ||
        ::statx(AT_FDCWD, real, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_MNT_ID, &sx) != 0)
      return failure("--path {}: {}", p, std::strerror(errno));
    if (std::string_view(real) == "/") return failure("--path /: that is everything; leave it out");
    k.paths.emplace_back(real);
    k.inodes.emplace_back(static_cast<uint32_t>(sx.stx_mnt_id), sx.stx_ino);
  }
  return k;
}

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> tids;
  if (DIR* d = ::opendir(fmt::format("/proc/{}/task", pid).c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
    ::closedir(d);
  }
  return tids;
}

// Signals that stop a recording arrive on a signalfd; the mask is restored on the way out.
class stop_signals {
 public:
  stop_signals() {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, s);
    ::sigprocmask(SIG_BLOCK, &set_, &old_);
    fd_ = ::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~stop_signals() {
    if (fd_ >= 0) ::close(fd_);
    ::sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  int fd() const { return fd_; }
  int take() {  // the pending signal, or 0
    signalfd_siginfo si;
    return ::read(fd_, &si, sizeof si) == sizeof si ? static_cast<int>(si.ssi_signo) : 0;
  }

 private:
  sigset_t set_, old_;
  int fd_ = -1;
};

// Closes the fds it holds when it goes out of scope.
struct fd_set_owner {
  std::vector<int> fds;
  fd_set_owner() = default;
  fd_set_owner(const fd_set_owner&) = delete;
  fd_set_owner& operator=(const fd_set_owner&) = delete;
  ~fd_set_owner() {
    for (int fd : fds) ::close(fd);
  }
};

bool exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

// Removes the file it names when it goes out of scope, unless told to keep it: a recording
// that cannot start (an error, or an exception such as bad_alloc) leaves no trace file.
class remove_unless_kept {
 public:
  explicit remove_unless_kept(const std::string& path) : path_(path) {}
  ~remove_unless_kept() {
    if (!kept_) ::unlink(path_.c_str());
  }
  remove_unless_kept(const remove_unless_kept&) = delete;
  remove_unless_kept& operator=(const remove_unless_kept&) = delete;
  void keep() { kept_ = true; }

 private:
  const std::string& path_;
  bool kept_ = false;
};

}  // namespace

uint64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || end == s.c_str()) return 0;
  const std::string unit(end);
  uint64_t mult = 1;
  if (unit == "K" || unit == "k" || unit == "KiB")
    mult = 1ull << 10;
  else if (unit == "M" || unit == "m" || unit == "MiB")
    mult = 1ull << 20;
  else if (unit == "G" || unit == "g" || unit == "GiB")
    mult = 1ull << 30;
  else if (!unit.empty())
    return 0;
  return v * mult;
}

namespace {

// One recording, in the order it happens: start (fork the command held, load the probes,
// mark what to follow, snapshot, attach, release), follow (drain until the workload ends
// or a signal stops it), stop (detach, drain, account losses, footer).
class recording {
 public:
  // Creates the trace file; a failure after that leaves it as the writer does (no footer).
  // On the heap: the decoder and the callbacks given to the probes point into it.
  static result<std::unique_ptr<recording>> create(const record_options& o,
                                                   const header_info& header) {
    auto writer = trace_writer::create(o.output, header, writer_opts(o));
    if (!writer) return tl::unexpected(writer.error());
    auto roots = root_registry::open();
    if (!roots) return tl::unexpected(roots.error());
    return std::unique_ptr<recording>(
        new recording(o, header, std::move(*writer), std::move(*roots)));
  }

  // However a recording ends (an error or exception included): programs detached first, then
  // every process stopped continued, the drain stopped, and any still stopped continued. With
  // the programs still attached, they could stop a continued process again with nobody left
  // to continue it.
  ~recording() { wind_down(); }

  static writer_options writer_opts(const record_options& o) {
    writer_options w{.overwrite = o.overwrite};
    // --max-size: blocks small enough for the trace to end close to it
    if (o.max_bytes) w.chunk_bytes = std::clamp<uint64_t>(o.max_bytes / 4, 16u << 10, 8u << 20);
    return w;
  }

  // Everything before the workload runs. On an error the command has not run; the destructor
  // detaches the programs if they were attached, and kills it.
  result<void> start(uint64_t ring_bytes) {
    const auto kept = resolve_kept(o_.paths);
    if (!kept) return tl::unexpected(kept.error());
    if (!kept->paths.empty())
      dec_.keep_only(kept->paths, [this] { bpf_->stop_kernel_path_filter(); });
    if (!o_.cgroup.empty()) {
      const auto fd = open_cgroup(o_.cgroup);
      if (!fd) return tl::unexpected(fd.error());
      cgroup_fd_.fds.push_back(*fd);
    }
    if (!o_.command.empty()) {
      auto cmd = held_command::start(o_.command);
      if (!cmd) return tl::unexpected(cmd.error());
      cmd_.emplace(std::move(*cmd));
    }
    FSRR_TRY(load(ring_bytes, kept->inodes));
    if (cmd_) {
      const auto traced = bpf_->trace_thread(cmd_->pid(), true);
      if (!traced) return tl::unexpected(traced.error());
      if (!*traced) return failure("the command vanished before it ran");
    }
    FSRR_TRY(hold_pids());
    FSRR_TRY(snapshot());
    if (!o_.pids.empty()) FSRR_TRY(bpf_->read_open_files(o_.pids));  // fds open before recording
    drain_->start();
    FSRR_TRY(bpf_->attach());
    for (pid_t p : o_.pids)  // threads started between the listing and the attach
      FSRR_TRY(trace_threads_of(p));
    if (cmd_) FSRR_TRY(cmd_->release());
    start_ = monotonic_ns();
    // --duration counts from the trace's time 0, so that `info` shows at most that duration
    if (o_.duration_ns) cut_at_ = base_ + o_.duration_ns;
    if (o_.max_bytes && !cut_at_) cut_at_ = UINT64_MAX;
    return {};
  }

  // Until the command exits, all --pid processes are gone, the --cgroup emptied, the
  // recording reached its --duration or --max-size, or a signal says stop.
  void follow(stop_signals& signals) {
    fd_set_owner ep;
    ep.fds.push_back(::epoll_create1(EPOLL_CLOEXEC));
    for (int fd : {drain_->ready_fd(), signals.fd(), cmd_ ? cmd_->pidfd() : -1}) {
      if (fd < 0) continue;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      ::epoll_ctl(ep.fds[0], EPOLL_CTL_ADD, fd, &ev);
    }
    uint64_t next_clock = start_ + clock_pair_ns, deadline = 0, next_cgroup_look = 0;
    const uint64_t end = o_.duration_ns ? base_ + o_.duration_ns : UINT64_MAX;
    bool cgroup_was_populated = false;
    for (;;) {
      drain_->decoder_beat();  // SCHED_IDLE from here on, while it keeps up
      epoll_event evs[4];
      ::epoll_wait(ep.fds[0], evs, 4, poll_ms);
      decode();
      peak_tracked_ = std::max<uint64_t>(peak_tracked_, dec_.tracked());
      const uint64_t now = monotonic_ns();
      writer_.flush_if_due(dec_.trace_time(now));  // a killed recorder loses at most ~1 s
      if (!writer_.status()) return;               // a write refused (ENOSPC): stop() reports it
      if (now >= next_clock) {
        writer_.add_clock_pair(now, static_cast<int64_t>(clock_ns(CLOCK_REALTIME)));
        next_clock = now + clock_pair_ns;
      }
      if (const int sig = signals.take()) {
        interrupted_ = true;
        if (!cmd_ || deadline) return;  // a second signal: stop now
        cmd_->signal(sig);              // let the command end, and record how it does
        deadline = now + grace_ns;
      }
      if (cmd_ && cmd_->poll()) return;
      if (deadline && now >= deadline) return;
      if (now >= end || (o_.max_bytes && writer_.file_bytes() >= o_.max_bytes)) {
        cut_short_ = true;
        cut_by_duration_ = now >= end;
        return;
      }
      if (!cmd_ && !pidfds_.fds.empty()) {
        bool all_gone = true;
        for (int fd : pidfds_.fds) all_gone = all_gone && exited(fd);
        if (all_gone) return;
      }
      if (!cmd_ && pidfds_.fds.empty() && !o_.all && !cgroup_fd_.fds.empty() &&
          now >= next_cgroup_look) {  // a cgroup that had processes (traced ones, or seen
        const bool now_populated = populated(cgroup_fd_.fds[0]);  // there) and has none left
        cgroup_was_populated =
            cgroup_was_populated || now_populated || writer_.summary().threads > 0;
        if (cgroup_was_populated && !now_populated) return;
        next_cgroup_look = now + 100'000'000;
      }
    }
  }

  // The command of a recording cut short goes on untraced: its exit status, when it ends.
  // Stop signals still reach it.
  int wait_command(stop_signals& signals) {
    if (!cmd_) return 0;
    for (;;) {
      pollfd p[2] = {{cmd_->pidfd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
      ::poll(p, 2, -1);
      if (const int sig = signals.take()) cmd_->signal(sig);
      if (const auto status = cmd_->poll()) return *status;
    }
  }

  // `decode_rest`: the records still in the ring are decoded as the drain ends (the queue
  // keeps to its budget); without, they are left in the queue (an error path).
  void wind_down(bool decode_rest = false) {
    if (drain_) drain_->decoder_awake();  // the user waits for what follows
    if (bpf_) bpf_->detach();  // no program runs after this; what they sent is in the ring
    // Nothing stops a process again now: those waiting for the ring go on at once, not once
    // it has been decoded.
    if (pauses_) pauses_->resume_all();
    if (drain_ && decode_rest)
      drain_->stop([this](std::span<const uint8_t> r) { on_record(r); });
    else if (drain_)
      drain_->stop();
    if (pauses_) pauses_->resume_all();  // one a program stopped as it was being detached
  }

  result<record_result> stop() {
    wind_down(true);
    decode();
    dec_.finish();
    const uint64_t end = monotonic_ns();
    const auto lost = bpf_->counter(FSRR_C_LOST);
    const auto nostate = bpf_->counter(FSRR_C_NOSTATE);  // tasks we could not follow
    for (size_t cpu = 0; cpu < lost.size(); ++cpu)
      writer_.add_lost(static_cast<uint32_t>(cpu), lost[cpu] + nostate[cpu]);
    writer_.add_lost(0, bpf_->missed_runs() + dec_.stats().malformed);
    uint64_t paused = 0;
    for (uint64_t n : bpf_->counter(FSRR_C_PAUSES)) paused += n;
    writer_.add_pauses(paused, pauses_->stats().paused_ns);
    for (uint64_t n : bpf_->counter(FSRR_C_FILTERED)) filtered_in_kernel_ += n;
    writer_.add_filtered(dec_.stats().filtered + filtered_in_kernel_);
    uint64_t compat = 0;
    for (uint64_t n : bpf_->counter(FSRR_C_COMPAT)) compat += n;
    if (compat) writer_.mark_incomplete(incomplete_compat_syscalls);
    uint64_t unfollowed = 0;  // io_uring requests beyond what the in-flight map holds
    for (uint64_t n : bpf_->counter(FSRR_C_URING_FULL)) unfollowed += n;
    if (unfollowed) writer_.mark_incomplete(incomplete_io_uring);
    uint64_t missed_faults = 0;  // write faults whose mapping could not be looked up
    for (uint64_t n : bpf_->counter(FSRR_C_FAULT_MISSED)) missed_faults += n;
    if (missed_faults) writer_.mark_incomplete(incomplete_shared_mmap);
    writer_.add_clock_pair(end, static_cast<int64_t>(clock_ns(CLOCK_REALTIME)));
    FSRR_TRY(writer_.finish());

    record_result res;
    res.cut_short = cut_short_;
    if (cmd_) {
      const auto status = cmd_->poll();
      // it outlived the grace period, or goes on after a recording cut short
      res.exit_status = status ? *status : cut_short_ ? 0 : 128 + SIGTERM;
      res.cut_short = cut_short_ && !status;
    }
    res.cut_by_duration = res.cut_short && cut_by_duration_;
    res.size_reached = size_reached_ && !res.cut_short;
    const trace_summary& sum = writer_.summary();
    res.events = sum.events;
    res.lost = sum.lost_events;
    res.trace_bytes = writer_.file_bytes();
    res.duration_ns = end - start_;
    res.unresolved = dec_.stats().unresolved;
    res.compat = compat;
    res.interrupted = interrupted_;
    res.peak_tracked = std::max<uint64_t>(peak_tracked_, dec_.tracked());
    res.exact_bpf = bpf_->exact();
    res.peak_queued = drain_->stats().peak_queued;
    res.peak_queue_memory = drain_->stats().peak_memory;
    res.ring_wrapped = drain_->stats().wrapped;
    res.decoder_idled = drain_->stats().decoder_idled;
    res.decoder_raised = drain_->stats().decoder_raised;
    rusage self{};
    ::getrusage(RUSAGE_SELF, &self);
    for (const timeval& t : {self.ru_utime, self.ru_stime})
      res.cpu_ns += static_cast<uint64_t>(t.tv_sec) * 1'000'000'000 + t.tv_usec * 1000ull;
    res.pauses = sum.pauses;
    res.paused_ns = sum.paused_ns;
    res.filtered = sum.filtered;
    res.filtered_in_kernel = filtered_in_kernel_;
    drain_.reset();   // it calls the pause keeper,
    pauses_.reset();  // which uses the programs' map,
    bpf_.reset();     // which go now, leave_for_exit or not
    return res;
  }

 private:
  recording(const record_options& o, const header_info& header, trace_writer writer,
            root_registry roots)
      : o_(o),
        writer_(std::move(writer)),
        roots_(std::move(roots)),
        dec_(writer_, header.clock_monotonic_ns, roots_),
        base_(header.clock_monotonic_ns) {
    writer_.add_clock_pair(header.clock_monotonic_ns, header.clock_realtime_ns);
  }

  // The programs, loaded and not attached, the pause keeper and the drain (not started).
  result<void> load(uint64_t ring_bytes,
                    const std::vector<std::pair<uint32_t, uint64_t>>& kept_inodes) {
    const root_dir& self = roots_.self();
    auto loaded =
        probes::load(probe_options{o_.all, ring_bytes, !o_.pids.empty(), o_.portable_bpf, !o_.lossy,
                                   self.mount_root ? self.key.mnt_id : 0, self.key.bpf(),
                                   cgroup_fd_.fds.empty() ? -1 : cgroup_fd_.fds[0], kept_inodes},
                     [this](std::span<const uint8_t> r) { dec_.on_record(r); });
    if (!loaded) return tl::unexpected(loaded.error());
    bpf_.emplace(std::move(*loaded));
    dec_.follow_uring(bpf_->uring());
    dec_.follow_mapped_writes(bpf_->mapped_writes());
    roots_.on_new([this](const root_key& k) { bpf_->add_root(k.bpf()); });
    pauses_.emplace(
        bpf_->paused_fd(), ring_bytes / 8, [this](pid_t pid) { roots_.grab(pid); },
        [this] {
          uint64_t n = 0;
          for (uint64_t c : bpf_->counter(FSRR_C_PAUSED)) n += c;
          return n;
        });
    auto opened = drain::open(
        bpf_->ring_fd(), bpf_->ring_size(), o_.queue_bytes,
        [this](uint64_t pending) { pauses_->after_pass(pending); }, o_.idle_decoder);
    if (!opened) return tl::unexpected(opened.error());
    drain_ = std::move(*opened);
    return {};
  }

  // --pid: a pidfd for each (to tell when all are gone), its root and its threads.
  result<void> hold_pids() {
    for (pid_t p : o_.pids) {
      const int fd = static_cast<int>(::syscall(SYS_pidfd_open, p, 0));
      if (fd < 0) return failure("--pid {}: {}", p, std::strerror(errno));
      pidfds_.fds.push_back(fd);
      roots_.grab(p);  // held before its first syscall asks for it
      FSRR_TRY(trace_threads_of(p));
    }
    return {};
  }

  result<void> trace_threads_of(pid_t p) {
    for (pid_t t : threads_of(p)) FSRR_TRY(bpf_->trace_thread(t, false));
    return {};
  }

  // --snapshot: each tree whole in the trace, before the workload runs.
  result<void> snapshot() {
    for (const auto& dir : o_.snapshot_dirs) {
      char real[PATH_MAX];
      if (!::realpath(dir.c_str(), real))
        return failure("cannot snapshot {}: {}", dir, std::strerror(errno));
      // fsrr's own root, root 1: snapshot_tree writes below root_path
      dec_.tree().cover(dec_.paths().from_absolute(dec_.own_root_top(), real));
      FSRR_TRY(snapshot_tree(writer_, real));
    }
    return {};
  }

  // Records after the end of a recording cut short (--duration, --max-size) are left out:
  // the trace ends where it was asked to, not where the programs were detached.
  void decode() {
    drain_->take([this](std::span<const uint8_t> r) { on_record(r); });
  }

  void on_record(std::span<const uint8_t> r) {
    if (discard_) return;
    if (cut_at_ && r.size() >= sizeof(fsrr_rec_hdr)) {
      const auto* h = reinterpret_cast<const fsrr_rec_hdr*>(r.data());
      uint64_t end = h->ts;  // a syscall is in the trace if it returned in time
      if (h->type == FSRR_REC_SYSCALL && r.size() >= sizeof(fsrr_syscall))
        end += reinterpret_cast<const fsrr_syscall*>(r.data())->dur;
      if (end >= cut_at_) return;
      if (o_.max_bytes && writer_.file_bytes() >= o_.max_bytes) {
        cut_at_ = std::min<uint64_t>(cut_at_, h->ts);
        size_reached_ = true;
        return;
      }
    }
    dec_.on_record(r);
  }

  const record_options& o_;
  // FSRR_BENCH_DISCARD=1: records are taken from the ring buffer and dropped, not decoded, so
  // bench/record_overhead.sh can tell the programs' cost from the decoder's (the trace is
  // empty then).
  const bool discard_ = std::getenv("FSRR_BENCH_DISCARD") != nullptr;
  trace_writer writer_;
  root_registry roots_;
  decoder dec_;
  std::optional<held_command> cmd_;
  std::optional<probes> bpf_;
  std::optional<pause_keeper> pauses_;  // before the drain, which calls it, is gone
  std::unique_ptr<drain> drain_;
  fd_set_owner pidfds_;
  fd_set_owner cgroup_fd_;
  bool cut_short_ = false;
  bool size_reached_ = false;  // decode() left events out at --max-size
  uint64_t filtered_in_kernel_ = 0;
  const uint64_t base_;  // CLOCK_MONOTONIC at the trace's time 0
  uint64_t cut_at_ = 0;
  bool cut_by_duration_ = false;  // CLOCK_MONOTONIC ns; UINT64_MAX: when the trace reaches --max-size
  uint64_t start_ = 0;
  uint64_t peak_tracked_ = 0;
  bool interrupted_ = false;
};

}  // namespace

result<record_result> record(const record_options& options, const record_stopped& on_stopped) {
  if (options.command.empty() && options.pids.empty() && !options.all && options.cgroup.empty())
    return failure("nothing to record: give a command, --pid PID, --cgroup PATH or --all");
  uint64_t ring = 256 << 10;  // twice the largest record, at least
  while (ring < options.ring_bytes && ring < (1ull << 31)) ring <<= 1;

  stop_signals signals;
  const header_info header = make_header(options);
  auto created = recording::create(options, header);  // the trace file
  if (!created) return tl::unexpected(created.error());
  std::unique_ptr<recording> r = std::move(*created);
  {
    remove_unless_kept output(options.output);  // on a failure, before r is gone
    FSRR_TRY(r->start(ring));
    output.keep();
  }
  if (options.on_started) options.on_started();
  r->follow(signals);
  auto res = r->stop();
  if (!res) return res;
  if (on_stopped) on_stopped(*res);
  if (res->cut_short) res->exit_status = r->wait_command(signals);
  if (options.leave_for_exit) {
    // Tearing down the tables of millions of paths takes longer than the process's exit.
    [[maybe_unused]] recording* left = r.release();
#ifdef FSRR_SANITIZED
    __lsan_ignore_object(left);  // left on purpose: LeakSanitizer is told so
#endif
  }
  if (options.strict && res->lost)
    return failure("{} events lost (--strict); the trace {} is incomplete", res->lost,
                   options.output);
  return res;
}

}  // namespace fsrr::recorder
