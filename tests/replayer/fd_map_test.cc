// The recorded fd tables: which open file each recorded fd of each thread refers to.
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>

#include <catch2/catch.hpp>

#include "fd_map.h"

using namespace fsrr;

namespace {

// Thread 1 (tid 100) on table 1; thread 2 (tid 101) on table 1 (CLONE_FILES sibling);
// thread 3 (tid 200) on table 2 (a forked child).
fd_map three_threads() {
  std::vector<thread_info> t(4);
  t[1] = {100, 100, 1, 0, 1};
  t[2] = {101, 100, 1, 0, 1};
  t[3] = {200, 200, 100, 0, 2};
  return fd_map(std::move(t));
}

event ev(thread_id t, op k, int32_t fd = -1, int64_t result = 0) {
  event e;
  e.thread = t;
  e.kind = k;
  e.fd = fd;
  e.result = result;
  return e;
}

event open_ev(thread_id t, int64_t fd, uint32_t flags = O_RDONLY, path_id path = 5) {
  event e = ev(t, op::openat, -1, fd);
  e.flags = flags;
  e.path = path;
  return e;
}

}  // namespace

TEST_CASE("an open creates a handle that later ops on the fd resolve to") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  REQUIRE(fx.opened);
  const handle_id h = fx.h1;
  CHECK(h != no_handle);
  m.apply(ev(1, op::read, 3, 10), fx);
  CHECK(fx.h1 == h);
  CHECK_FALSE(fx.opened);
}

TEST_CASE("a failed open creates no handle") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, -ENOENT), fx);
  CHECK(fx.h1 == no_handle);
  CHECK_FALSE(fx.opened);
}

TEST_CASE("closing the last fd of an open file releases its handle") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  const handle_id h = fx.h1;
  m.apply(ev(1, op::close, 3), fx);
  CHECK(fx.h1 == h);
  CHECK(fx.released == std::vector<handle_id>{h});
  m.apply(ev(1, op::read, 3, -EBADF), fx);
  CHECK(fx.h1 == no_handle);
}

TEST_CASE("threads sharing a table share fds") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  const handle_id h = fx.h1;
  m.apply(ev(2, op::write, 3, 5), fx);
  CHECK(fx.h1 == h);
}

TEST_CASE("a forked child gets a copy: its close does not release the parent's file") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  const handle_id h = fx.h1;
  event fork = ev(1, op::clone, -1, 200);
  fork.flags = SIGCHLD;
  fork.aux = 2;
  m.apply(fork, fx);
  m.apply(ev(3, op::read, 3, 1), fx);
  CHECK(fx.h1 == h);
  m.apply(ev(3, op::close, 3), fx);
  CHECK(fx.released.empty());
  m.apply(ev(1, op::read, 3, 1), fx);
  CHECK(fx.h1 == h);
  m.apply(ev(1, op::close, 3), fx);
  CHECK(fx.released == std::vector<handle_id>{h});
}

TEST_CASE("an fd opened after the fork is not in the child's copy") {
  fd_map m = three_threads();
  fd_effect fx;
  event fork = ev(1, op::fork, -1, 200);
  fork.aux = 2;
  m.apply(fork, fx);
  m.apply(open_ev(1, 3), fx);
  m.apply(ev(3, op::read, 3, -EBADF), fx);
  CHECK(fx.h1 == no_handle);
}

TEST_CASE("exec closes close-on-exec fds and keeps the others") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(3, 3, O_RDONLY | O_CLOEXEC), fx);
  const handle_id closing = fx.h1;
  m.apply(open_ev(3, 4, O_RDONLY), fx);
  const handle_id kept = fx.h1;
  event exec = ev(3, op::execve);
  exec.aux = 2;
  m.apply(exec, fx);
  CHECK(fx.released == std::vector<handle_id>{closing});
  m.apply(ev(3, op::read, 4, 1), fx);
  CHECK(fx.h1 == kept);
}

TEST_CASE("dup2 onto an open fd releases what it replaced") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  const handle_id a = fx.h1;
  m.apply(open_ev(1, 4), fx);
  const handle_id b = fx.h1;
  event d = ev(1, op::dup2, 3, 4);
  d.fd2 = 4;
  m.apply(d, fx);
  CHECK(fx.released == std::vector<handle_id>{b});
  m.apply(ev(1, op::read, 4, 1), fx);
  CHECK(fx.h1 == a);
}

TEST_CASE("fcntl F_DUPFD adds an fd to the same open file") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  const handle_id h = fx.h1;
  event d = ev(1, op::fcntl, 3, 10);
  d.aux = F_DUPFD_CLOEXEC;
  m.apply(d, fx);
  m.apply(ev(1, op::close, 3), fx);
  CHECK(fx.released.empty());
  m.apply(ev(1, op::read, 10, 1), fx);
  CHECK(fx.h1 == h);
}

TEST_CASE("close_range closes every fd in the range") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  m.apply(open_ev(1, 4), fx);
  m.apply(open_ev(1, 9), fx);
  event c = ev(1, op::close_range, 3);
  c.fd2 = -1;  // ~0U
  m.apply(c, fx);
  CHECK(fx.released.size() == 3);
}

TEST_CASE("close_range with CLOSE_RANGE_CLOEXEC only marks the fds for exec") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(3, 3), fx);
  event c = ev(3, op::close_range, 0);
  c.fd2 = 100;
  c.flags = CLOSE_RANGE_CLOEXEC;
  m.apply(c, fx);
  CHECK(fx.released.empty());
  event exec = ev(3, op::execve);
  exec.aux = 2;
  m.apply(exec, fx);
  CHECK(fx.released.size() == 1);
}

TEST_CASE("the last thread leaving a table closes its fds") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  m.apply(ev(2, op::read, 3, 1), fx);  // thread 2 joins table 1
  m.apply(ev(1, op::exit), fx);
  CHECK(fx.released.empty());
  m.apply(ev(2, op::exit), fx);
  CHECK(fx.released.size() == 1);
}

TEST_CASE("a copy op with offsets of -1 uses and moves the fds' positions") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  m.apply(open_ev(1, 4, O_WRONLY | O_CREAT), fx);
  const handle_id out = fx.h1;
  event c = ev(1, op::copy_file_range, 3, 100);
  c.fd2 = 4;
  c.offset = c.offset2 = -1;
  c.size = 1 << 30;
  m.apply(c, fx);
  CHECK(fx.pos1);
  CHECK(fx.pos2);
  CHECK(m.handle(out).pos == 100);
}

TEST_CASE("a copy op with explicit offsets leaves the fds' positions alone") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  m.apply(open_ev(1, 4, O_WRONLY | O_CREAT), fx);
  const handle_id out = fx.h1;
  event c = ev(1, op::copy_file_range, 3, 100);
  c.fd2 = 4;
  c.offset = 0;  // the position itself, passed by pointer
  c.offset2 = 700;
  c.size = 100;
  m.apply(c, fx);
  CHECK_FALSE(fx.pos1);
  CHECK_FALSE(fx.pos2);
  CHECK(m.handle(out).pos == 0);
}

TEST_CASE("dup2 from an fd the trace does not follow closes the file fd2 held") {
  fd_map m = three_threads();
  fd_effect fx;
  m.apply(open_ev(1, 3), fx);
  const handle_id h = fx.h1;
  event d = ev(1, op::dup2, 7, 3);  // fd 7: a pipe, never seen in the trace
  d.fd2 = 3;
  m.apply(d, fx);
  CHECK(fx.h1 == no_handle);
  CHECK(fx.released == std::vector<handle_id>{h});
  m.apply(ev(1, op::write, 3, 10), fx);
  CHECK(fx.h1 == no_handle);
}

TEST_CASE("a close entered just before another thread's open returned its number closes the old file") {
  // Recorded: thread 1's open entered at 100 and returned 3 at 110; thread 2's open of another
  // file entered at 200; thread 1's close(3) at 202; thread 2's open returned 3 at 209 (the
  // kernel gave it the number the close had freed).
  fd_map m = three_threads();
  fd_effect fx;
  event o1 = open_ev(1, 3, O_RDONLY, 5);
  o1.ts = 100;
  o1.dur = 10;
  m.apply(o1, fx);
  const handle_id first = fx.h1;
  event o2 = open_ev(2, 3, O_RDONLY, 6);
  o2.ts = 200;
  o2.dur = 9;
  m.apply(o2, fx);
  const handle_id second = fx.h1;
  REQUIRE(second != first);
  CHECK(fx.released.empty());  // the first is still open until its close
  event c = ev(1, op::close, 3, 0);
  c.ts = 202;
  m.apply(c, fx);
  CHECK(fx.h1 == first);
  CHECK(fx.released == std::vector<handle_id>{first});
  event r = ev(2, op::read, 3, 10);
  r.ts = 215;
  m.apply(r, fx);
  CHECK(fx.h1 == second);
  event c2 = ev(2, op::close, 3, 0);
  c2.ts = 220;
  m.apply(c2, fx);
  CHECK(fx.released == std::vector<handle_id>{second});
  CHECK(m.live().empty());
}
