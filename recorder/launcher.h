// The traced command: forked, then held before exec until the probes are attached, so that
// not one of its syscalls is missed.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "result.h"

namespace fsrr::recorder {

class held_command {
 public:
  // Finds argv[0] on PATH and forks; the child waits. An error if there is no such program
  // (status 127) or it cannot be run (126).
  static result<held_command> start(const std::vector<std::string>& argv);
  ~held_command();  // a command never released is killed
  held_command(held_command&& o) noexcept;
  held_command& operator=(held_command&&) = delete;

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_; }  // readable once it has exited
  // Lets it exec. An error if the exec failed (the child has been waited for then).
  result<void> release();
  // Its exit status, shell style (128 + signal), once it has exited.
  std::optional<int> poll();
  int wait();
  void signal(int sig);

 private:
  held_command() = default;

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int go_ = -1;     // write end of the pipe the child waits on
  int error_ = -1;  // read end: the child's errno if exec failed, EOF once it succeeded
  bool released_ = false;
  std::optional<int> status_;
};

}  // namespace fsrr::recorder
