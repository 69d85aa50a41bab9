// What the recorder tests share: the environment check, scratch directories, running
// programs, and a recorded trace loaded for assertions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "event.h"
#include "recorder.h"
#include "temp_dir.h"  // tests/common: scratch directories, on tmpfs by default
#include "trace_reader.h"

namespace fsrr::test {

// Recording needs root and kernel BTF. Without them a test returns early with a warning,
// except under CI=true, where that is a failure.
bool can_record();
#define REQUIRE_RECORDING()                  \
  do {                                       \
    if (!::fsrr::test::can_record()) return; \
  } while (0)

// The idle decoder (idle_decoder.h) also needs CAP_SYS_NICE, which root may lack in a
// container: without it, as without root, a test returns early, or fails under CI=true.
bool can_idle();
#define REQUIRE_IDLE_DECODER()                                            \
  do {                                                                    \
    if (!::fsrr::test::can_record() || !::fsrr::test::can_idle()) return; \
  } while (0)

void write_file(const std::string& path, size_t bytes, char fill = 'p');

// Runs argv, waits; returns the shell-style exit status. stdout goes to `out` if given.
int run(const std::vector<std::string>& argv, const std::string& out = "");

std::string workload();  // the fsrr_workload helper built next to the tests

// record() with the tests' defaults: overwrite, output in `dir`. Throws its error (the test
// fails with the message).
recorder::record_result record(recorder::record_options o);
// The same, for a test of the error.
result<recorder::record_result> try_record(recorder::record_options o);

// A recorded trace, read back in full.
struct trace {
  explicit trace(const std::string& path);
  trace_reader reader;
  std::vector<event> events;

  std::string path(path_id id) { return reader.path_string(id); }
  const thread_info& thread(const event& e) { return reader.thread(e.thread); }
  std::vector<const event*> all(op o) const;
  std::vector<const event*> at(op o, const std::string& path);  // events on that path
  // The one event of op `o` on `path`; fails the test unless there is exactly one.
  const event& one(op o, const std::string& path);
  const tree_entry* tree_entry_at(const std::string& path);
  std::deque<tree_entry> found_entries;
  // Events plus non-file counts per syscall name.
  std::map<std::string, uint64_t> totals();
};

// `strace -f -y` of argv: per syscall, calls in all and calls on an fd that is a stored file
// (not a pipe, socket, device, or a file of /proc or /sys).
struct strace_counts {
  std::map<std::string, uint64_t> all;
  std::map<std::string, uint64_t> on_files;
};
strace_counts strace(const std::vector<std::string>& argv, const std::string& log);

}  // namespace fsrr::test
