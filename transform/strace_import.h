// import strace: what people capture where eBPF is not there, `strace -f -ttt -T -y` (or -yy)
// logs, as a trace. Each call of an op fsrr knows becomes that event (or, on a pipe, socket,
// tty, device or pseudo file system, a non-file op count, as the recorder counts them; on a
// pipe or a Unix socket shown by -yy, a stream event too); `+++ exited +++` the thread's exit.
// Paths come from -y's annotations (an fd's file, AT_FDCWD's directory) and the names the
// calls give, made absolute; the initial tree from what the log shows of the objects the
// program found rather than made: stat results (type, size, mode), what it opened and read.
// What strace does not show is not in the trace: inode numbers (files are told apart by path
// and by what the calls did to them), exact file positions (worked out from the calls).
#pragma once

#include <cstdint>
#include <string>

#include "result.h"

namespace fsrr::transform {

struct strace_import_result {
  uint64_t lines = 0;
  uint64_t events = 0;
  uint64_t nonfile = 0;      // calls on pipes, sockets, ttys, devices, pseudo file systems
  uint64_t not_ops = 0;      // calls of syscalls fsrr does not record (brk, rt_sigaction, ...)
  uint64_t unparsed = 0;     // lines that are not calls, exits or signals
  uint64_t threads = 0;
  uint64_t tree = 0;         // initial tree entries
  bool annotated = false;    // -y annotations were there
};

// Fails on an unreadable log, an output that exists (without force).
result<strace_import_result> import_strace(const std::string& log, const std::string& out,
                                           bool force);

}  // namespace fsrr::transform
