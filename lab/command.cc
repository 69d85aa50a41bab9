#include "command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace fsrr::lab {

command_result run_command(const std::vector<std::string>& argv, const command_options& o) {
  command_result r;
  if (argv.empty()) return r;
  // out[1]: where the program writes (a pipe's end, or /dev/null); out[0]: the pipe's other end
  int out[2] = {-1, -1};
  if (o.keep_output ? ::pipe2(out, O_CLOEXEC) != 0
                    : (out[1] = ::open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
    return r;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (out[0] >= 0) ::close(out[0]);
    ::close(out[1]);
    return r;
  }
  if (pid == 0) {
    for (const auto& [name, value] : o.env) ::setenv(name.c_str(), value.c_str(), 1);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  char buf[4096];
  for (ssize_t n; o.keep_output && (n = ::read(out[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (r.output.size() < (1u << 20)) r.output.append(buf, static_cast<size_t>(n));
  }
  if (out[0] >= 0) ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string tool_version(const std::string& program) {
  const command_result r = run_command({program, "-V"});
  if (r.status != 0) return "";
  const size_t nl = r.output.find('\n');
  return r.output.substr(0, nl);
}

std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

}  // namespace fsrr::lab
