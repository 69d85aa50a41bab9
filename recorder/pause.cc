#include "pause.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <vector>

#include "clock.h"
#include "fsrr.h"

namespace fsrr::recorder {
namespace {

// The guard: holds the paused map and waits for the end of fsrr on its lifeline pipe. A byte
// is a clean end (fsrr continued everyone itself); end of file is fsrr gone without that:
// the guard then continues every process still listed, a few times over while the programs
// detach (they go with fsrr's files). It holds no other fd of fsrr's: a BPF link it kept open
// would keep the programs attached.
[[noreturn]] void guard(int map, int lifeline) {
  ::prctl(PR_SET_NAME, "fsrr-guard");
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(s, SIG_IGN);
  if (::dup2(map, 3) < 0 || ::dup2(lifeline, 4) < 0) ::_exit(1);
  ::close_range(0, 2, 0);
  ::close_range(5, ~0u, 0);
  char byte;
  ssize_t n;
  while ((n = ::read(4, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n == 1) ::_exit(0);
  for (int sweep = 0; sweep < 5; ++sweep) {
    uint32_t key, next;
    std::vector<uint32_t> tgids;
    for (int err = bpf_map_get_next_key(3, nullptr, &next); err == 0;
         err = bpf_map_get_next_key(3, &key, &next)) {
      tgids.push_back(next);
      key = next;
    }
    for (uint32_t tgid : tgids) {
      bpf_map_delete_elem(3, &tgid);
      ::kill(static_cast<pid_t>(tgid), SIGCONT);
    }
    ::usleep(100'000);
  }
  ::_exit(0);
}

}  // namespace

pause_keeper::pause_keeper(int paused_map, uint64_t resume_below,
                           std::function<void(pid_t)> hold_root, std::function<uint64_t()> added)
    : map_(paused_map),
      resume_below_(resume_below),
      hold_root_(std::move(hold_root)),
      added_(std::move(added)) {
  int lifeline[2];
  if (::pipe2(lifeline, O_CLOEXEC) != 0) return;  // no guard: fsrr still continues them itself
  guard_ = ::fork();
  if (guard_ == 0) guard(map_, lifeline[0]);
  ::close(lifeline[0]);
  guard_pipe_ = lifeline[1];
}

pause_keeper::~pause_keeper() {
  resume_all();
  if (guard_pipe_ >= 0) {
    (void)!::write(guard_pipe_, "", 1);  // a clean end: the guard leaves at once
    ::close(guard_pipe_);
  }
  if (guard_ > 0) ::waitpid(guard_, nullptr, 0);
}

void pause_keeper::after_pass(uint64_t pending) {
  std::lock_guard lock(mu_);
  const uint64_t added = added_();  // read before the scan: what is added after, it may miss
  if (added == added_when_empty_ && !maybe_full_) return;  // nobody was stopped since
  maybe_full_ = resume_locked(monotonic_ns(), pending < resume_below_);
  if (!maybe_full_) added_when_empty_ = added;
}

void pause_keeper::resume_all() {
  std::lock_guard lock(mu_);
  resume_locked(monotonic_ns(), true);
}

// Each entry is deleted before its SIGCONT: a program that stops the process again meanwhile
// either sent its SIGSTOP first (the SIGCONT undoes it) or adds the entry back (next pass).
// Only waiting for the ring counts as a pause: a root is held within the pass.
bool pause_keeper::resume_locked(uint64_t now, bool drained) {
  std::vector<uint32_t> tgids;
  uint64_t since = now;
  uint32_t key, next;
  for (int err = bpf_map_get_next_key(map_, nullptr, &next); err == 0;
       err = bpf_map_get_next_key(map_, &key, &next)) {
    tgids.push_back(next);
    key = next;
  }
  bool left = false;
  for (uint32_t tgid : tgids) {
    fsrr_pause p{};
    if (bpf_map_lookup_elem(map_, &tgid, &p) != 0) continue;
    if ((p.reasons & FSRR_PAUSE_BACKLOG) && !drained) {
      left = true;
      continue;
    }
    // Taken out with the reasons it has now: one a program added since the look above counts.
    if (bpf_map_lookup_and_delete_elem(map_, &tgid, &p) != 0) continue;
    if ((p.reasons & FSRR_PAUSE_BACKLOG) && !drained) {  // it has just waited for the ring
      bpf_map_update_elem(map_, &tgid, &p, BPF_NOEXIST);
      left = true;
      continue;
    }
    if (p.reasons & FSRR_PAUSE_ROOT) hold_root_(static_cast<pid_t>(tgid));
    if (p.reasons & FSRR_PAUSE_BACKLOG) since = std::min<uint64_t>(since, p.since);
    ::kill(static_cast<pid_t>(tgid), SIGCONT);
  }
  if (since < now) {
    ++stats_.episodes;
    stats_.paused_ns += now - since;
  }
  return left;
}

pause_stats pause_keeper::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace fsrr::recorder
