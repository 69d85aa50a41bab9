// Reads a trace: checks the header, finds the blocks, and hands out the tables, the initial
// tree and a time-ordered event stream with bounded memory. A trace is untrusted input:
// every frame is checksummed by zstd and every block verified before use; damage is an error
// naming the block and offset (from open(), or from the event stream's status()), a torn tail
// (killed writer) a readable prefix.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "event.h"
#include "result.h"
#include "summary.h"
#include "tree_table.h"

namespace fsrr {

inline constexpr uint16_t format_major = 1;
// 1.1: roots, host ids, pauses; 1.2: derived, key id; 1.3: trace id; 1.4: hosts (merge);
// 1.5: event times in units of the header's time_unit_ns; 1.6: engine requests (event::via)
inline constexpr uint16_t format_minor = 6;
// The coarsest event time unit a trace may declare: a microsecond.
inline constexpr uint32_t max_time_unit_ns = 1000;
// A trace of several hosts (header_info::hosts) and times in ns is written as 2.5: a reader of
// 1.x, which knows no host indices, would take its hosts' threads and files for one host's and
// refuses it by name instead.
inline constexpr uint16_t format_major_hosts = 2;
// A trace whose times count in units above 1 ns (a recording's: 16 ns), hosts or not, is
// written as 3.5: a reader of 1.x or 2.x would take each unit for a nanosecond.
inline constexpr uint16_t format_major_units = 3;

class trace_reader {
 public:
  // Opens the file and reads its header, footer, tables and initial tree (every block's, not
  // yet the events): so the accessors below cannot fail.
  static result<trace_reader> open(const std::string& path);
  ~trace_reader();
  trace_reader(trace_reader&&) noexcept;
  trace_reader& operator=(trace_reader&&) = delete;  // an event_stream may point into it

  const header_info& header() const;
  bool has_footer() const;
  // Why the trace is not whole (torn tail), empty if it is.
  const std::string& damage() const;
  // Complete: footer present, nothing torn, no lost events, nothing invisible to tracing.
  bool complete();
  uint64_t file_bytes() const;
  size_t block_count() const;

  // Ids come from this trace's events and tree, which the reader checked: an unknown id (a
  // caller's bug) gets an empty entry.
  const trace_summary& summary();
  const tree_table& tree();  // entries by value
  size_t path_count();
  // "/a/b", as the process saw it (from its root); "" for no_id.
  std::string path_string(path_id id);
  // Where the path is replayed and verified beneath TARGET: path_string, or with several
  // roots, "/rootN" + path_string for a path of root N.
  std::string placed_path(path_id id);
  const std::vector<trace_root>& roots();  // roots()[k] is root k + 1; empty in older traces
  uint32_t root_of(path_id id);            // the root a path belongs to, from 1
  path_id top_of(path_id id);              // its topmost ancestor (root_path or a root's top)
  path_entry path(path_id id);
  const std::string& string(string_id id);
  file_info file(file_id id);
  const thread_info& thread(thread_id id);
  // The (CLOCK_MONOTONIC, CLOCK_REALTIME) pairs the recorder wrote, in order.
  const std::vector<std::pair<uint64_t, int64_t>>& clock_pairs();
  size_t string_count();
  size_t file_count();
  size_t thread_count() const;

  // Events of all threads merged by entry time (ties: thread, then program order).
  class event_stream {
   public:
    ~event_stream();
    event_stream(event_stream&&) noexcept;
    // False at the end of the events, or at a damaged block: then status() says which.
    bool next(event& out);
    result<void> status() const;

   private:
    friend class trace_reader;
    struct impl;
    explicit event_stream(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
  };
  event_stream events();

 private:
  struct impl;
  explicit trace_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace fsrr
