#include "launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "trace_error.h"

namespace fsrr::recorder {
namespace {

// argv[0] as execvp would find it; resolved here so that the traced command does exactly
// one execve, as under strace.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    const int e = errno;
    throw status_error(e == ENOENT ? 127 : 126, fmt::format("cannot run {}: {}", name, std::strerror(e)));
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
  throw status_error(127, fmt::format("{}: command not found", name));
}

int shell_status(const siginfo_t& info) {
  return info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
}

}  // namespace

held_command::held_command(const std::vector<std::string>& argv) {
  if (argv.empty()) throw trace_error("no command to record");
  const std::string program = find_program(argv[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw trace_error(fmt::format("pipe: {}", std::strerror(errno)));
  pid_ = ::fork();
  if (pid_ < 0) throw trace_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid_ == 0) {
    // The child: the signals the recorder blocks are the command's to receive.
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_UNBLOCK, &all, nullptr);
    ::close(go[1]);
    ::close(err[0]);
    char byte;
    ssize_t n;
    while ((n = ::read(go[0], &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1) ::_exit(127);  // the recorder gave up
    ::execv(program.c_str(), args.data());
    const int e = errno;
    (void)!::write(err[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(go[0]);
  ::close(err[1]);
  go_ = go[1];
  error_ = err[0];
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd_ < 0) throw trace_error(fmt::format("pidfd_open: {}", std::strerror(errno)));
}

held_command::~held_command() {
  if (pid_ > 0 && !released_) {
    ::kill(pid_, SIGKILL);
    wait();
  }
  for (int fd : {go_, error_, pidfd_})
    if (fd >= 0) ::close(fd);
}

void held_command::release() {
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
    throw trace_error(fmt::format("cannot run the command: {}", std::strerror(e)));
  }
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
