#include "launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "unique_fd.h"

namespace fsrr::recorder {
namespace {

// argv[0] as execvp would find it; resolved here so that the traced command does exactly
// one execve, as under strace.
result<std::string> find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    const int e = errno;
    return failure_with_status(fmt::format("cannot run {}: {}", name, std::strerror(e)),
                               e == ENOENT ? 127 : 126);
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t colon = dirs.find(':', pos);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(pos, colon - pos);
    if (dir.empty()) dir.assign(1, '.');
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    pos = colon + 1;
  }
  return failure_with_status(fmt::format("{}: command not found", name), 127);
}

int shell_status(const siginfo_t& info) {
  return info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
}

// The child: waits for a byte on `go`, then execs; if that fails, its errno goes to `error`.
[[noreturn]] void run_held(const std::string& program, char* const* args, int go, int error) {
  // The signals the recorder blocks are the command's to receive.
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_UNBLOCK, &all, nullptr);
  char byte;
  ssize_t n;
  while ((n = ::read(go, &byte, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) ::_exit(127);  // the recorder gave up
  ::execv(program.c_str(), args);
  const int e = errno;
  (void)!::write(error, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

result<held_command> held_command::start(const std::vector<std::string>& argv) {
  if (argv.empty()) return failure("no command to record");
  const auto program = find_program(argv[0]);
  if (!program) return tl::unexpected(program.error());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return failure("pipe: {}", std::strerror(errno));
  unique_fd go_read(fds[0]), go_write(fds[1]);
  if (::pipe2(fds, O_CLOEXEC) != 0) return failure("pipe: {}", std::strerror(errno));
  unique_fd error_read(fds[0]), error_write(fds[1]);
  held_command c;  // from the fork on, its destructor kills and reaps the child on failure
  c.pid_ = ::fork();
  if (c.pid_ < 0) return failure("fork: {}", std::strerror(errno));
  if (c.pid_ == 0) {
    go_write.reset();
    error_read.reset();
    run_held(*program, args.data(), go_read.get(), error_write.get());
  }
  c.go_ = go_write.release();
  c.error_ = error_read.release();
  c.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, c.pid_, 0));
  if (c.pidfd_ < 0) return failure("pidfd_open: {}", std::strerror(errno));
  return c;
}

held_command::held_command(held_command&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      pidfd_(std::exchange(o.pidfd_, -1)),
      go_(std::exchange(o.go_, -1)),
      error_(std::exchange(o.error_, -1)),
      released_(o.released_),
      status_(o.status_) {}

held_command::~held_command() {
  if (pid_ > 0 && !released_) {
    ::kill(pid_, SIGKILL);
    if (pidfd_ >= 0)
      wait();
    else
      ::waitpid(pid_, nullptr, 0);  // pidfd_open failed
  }
  for (int fd : {go_, error_, pidfd_})
    if (fd >= 0) ::close(fd);
}

result<void> held_command::release() {
  released_ = true;
  (void)!::write(go_, "x", 1);
  ::close(go_);
  go_ = -1;
  int e = 0;
  ssize_t n;
  while ((n = ::read(error_, &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(error_);
  error_ = -1;
  if (n == sizeof e) {
    wait();
    // as a shell has it: 127 for a program that is not there, 126 for one that cannot run
    return failure_with_status(fmt::format("cannot run the command: {}", std::strerror(e)),
                               e == ENOENT ? 127 : 126);
  }
  return {};
}

std::optional<int> held_command::poll() {
  if (status_) return status_;
  siginfo_t info{};
  if (::waitid(P_PIDFD, static_cast<id_t>(pidfd_), &info, WEXITED | WNOHANG) == 0 && info.si_pid)
    status_ = shell_status(info);
  return status_;
}

int held_command::wait() {
  if (status_) return *status_;
  siginfo_t info{};
  while (::waitid(P_PIDFD, static_cast<id_t>(pidfd_), &info, WEXITED) != 0) {
    if (errno != EINTR) return 127;
  }
  status_ = shell_status(info);
  return *status_;
}

void held_command::signal(int sig) {
  if (!status_) ::syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0);
}

}  // namespace fsrr::recorder
