// The traced command: forked, then held before exec until the probes are attached, so that
// not one of its syscalls is missed.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace fsrr::recorder {

class held_command {
 public:
  // Finds argv[0] on PATH and forks; the child waits. Throws trace_error if there is no such
  // program.
  explicit held_command(const std::vector<std::string>& argv);
  ~held_command();  // a command never released is killed
  held_command(const held_command&) = delete;
  held_command& operator=(const held_command&) = delete;

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_; }  // readable once it has exited
  // Lets it exec. Throws trace_error if the exec failed.
  void release();
  // Its exit status, shell style (128 + signal), once it has exited.
  std::optional<int> poll();
  int wait();
  void signal(int sig);

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int go_ = -1;     // write end of the pipe the child waits on
  int error_ = -1;  // read end: the child's errno if exec failed, EOF once it succeeded
  bool released_ = false;
  std::optional<int> status_;
};

}  // namespace fsrr::recorder
