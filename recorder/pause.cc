#include "pause.h"

#include <bpf/bpf.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "fsrr.h"

namespace fsrr::recorder {
namespace {

uint64_t monotonic_ns() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000 + static_cast<uint64_t>(t.tv_nsec);
}

}  // namespace

pause_keeper::pause_keeper(int paused_map, uint64_t resume_below,
                           std::function<void(pid_t)> hold_root, std::function<uint64_t()> added)
    : map_(paused_map),
      resume_below_(resume_below),
      hold_root_(std::move(hold_root)),
      added_(std::move(added)) {}

pause_keeper::~pause_keeper() {
  resume_all();
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
    if (p.reasons & FSRR_PAUSE_ROOT) hold_root_(static_cast<pid_t>(tgid));
    if (bpf_map_delete_elem(map_, &tgid) != 0) continue;
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
