#include "idle_decoder.h"

#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace fsrr::recorder {
namespace {

// SCHED_OTHER and SCHED_IDLE keep the thread's nice value as it is.
bool set_policy(pid_t tid, int policy) {
  const sched_param p{};
  return ::sched_setscheduler(tid, policy, &p) == 0;
}

}  // namespace

bool may_leave_idle() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) == 0 &&
      (data[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32))))
    return true;
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, 0);  // this thread's, on Linux
  rlimit limit{};
  if ((nice == -1 && errno) || ::getrlimit(RLIMIT_NICE, &limit) != 0) return false;
  return nice_limit_allows(nice, limit.rlim_cur);
}

bool nice_limit_allows(int nice, uint64_t limit) {
  return limit == RLIM_INFINITY || static_cast<uint64_t>(20 - nice) <= limit;
}

bool idle_decoder::enter() {
  if (!on_) return false;
  if (usable_ < 0) {
    const int policy = ::sched_getscheduler(0);
    usable_ = policy >= 0 && (policy & ~SCHED_RESET_ON_FORK) == SCHED_OTHER && may_leave_idle();
    reset_on_fork_ = policy >= 0 ? policy & SCHED_RESET_ON_FORK : 0;
    tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
  }
  if (!usable_) return false;
  // Marked idle first: the call that makes it so may hand the CPU to another thread at once,
  // and a thread starved there must already be one that raise() sees.
  idle_.store(true, std::memory_order_seq_cst);
  if (!set_policy(0, SCHED_IDLE | reset_on_fork_)) {
    idle_.store(false);
    return false;
  }
  entered_.fetch_add(1, std::memory_order_relaxed);
  // Raised meanwhile: its SCHED_OTHER may have come before this SCHED_IDLE.
  if (idle_.load(std::memory_order_seq_cst)) return true;
  set_policy(0, SCHED_OTHER | reset_on_fork_);
  return false;
}

void idle_decoder::leave() {
  if (!idle_.load(std::memory_order_seq_cst)) return;
  // Before the mark goes: until then raise() may do it as well. Should the call fail (a limit
  // lowered since), the mark stays for a later leave() or raise() to try again.
  if (set_policy(0, SCHED_OTHER | reset_on_fork_)) idle_.store(false, std::memory_order_seq_cst);
}

bool idle_decoder::raise() {
  if (!idle_.exchange(false, std::memory_order_seq_cst)) return false;
  if (!set_policy(tid_, SCHED_OTHER | reset_on_fork_)) {
    idle_.store(true, std::memory_order_seq_cst);  // still idle: let the next try come
    return false;
  }
  raised_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace fsrr::recorder
