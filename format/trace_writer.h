// Writes a trace: interns table entries, buffers events per thread in column form, and
// writes one zstd frame per block with a single write(2). finish() adds the footer; a writer
// that never gets there (killed) still leaves every flushed block readable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "event.h"
#include "result.h"
#include "summary.h"
#include "writer_options.h"

namespace fsrr {

struct trace_writer_state;  // trace_writer_state.h

class trace_writer {
 public:
  // Creates `path` with mode 0600 and writes the header; fails if the file exists and
  // !overwrite, or cannot be created or written.
  static result<trace_writer> create(const std::string& path, const header_info& header,
                                     writer_options options = {});
  ~trace_writer();  // flushes buffered data without a footer unless finish() ran
  trace_writer(trace_writer&&) noexcept;
  trace_writer& operator=(trace_writer&&) = delete;

  // Interning: the same key yields the same id, except that paths and files unseen for 98k
  // new ones (65k new strings) may get a new one, so that memory stays bounded (see
  // flat_intern and bounded_intern).
  // no_id for a path that does not start with '/' or a name valid_component refuses (empty,
  // or a '/' or NUL in it): a caller with untrusted names checks for it.
  path_id intern_path(std::string_view absolute);  // "/a/b/c"
  path_id intern_child(path_id parent, std::string_view name);
  string_id intern_string(std::string_view s);
  file_id intern_file(const file_info& f);
  // Threads are not deduplicated: a reused tid after exit is a new thread.
  thread_id add_thread(const thread_info& t);
  // A root directory (trace_root); returns its number, from 1. Root 1's top is root_path;
  // each further root gets a top path of its own, "rootN", to intern its paths below.
  uint32_t add_root(trace_root r);
  path_id root_top(uint32_t root) const;

  void append(const event& e);
  void add_tree_entry(const tree_entry& e);
  // The tree_entry::link_group of an inode with several names: one numbering per trace,
  // whoever adds the entries (a --snapshot walk and the recorder's initial tree).
  uint32_t link_group(uint64_t dev, uint64_t ino);
  void add_lost(uint32_t cpu, uint64_t count);
  void add_pauses(uint64_t count, uint64_t paused_ns);
  void add_filtered(uint64_t count);
  void add_nonfile(op o, fd_kind k, uint64_t count = 1);
  void mark_incomplete(uint64_t bits);
  void add_clock_pair(uint64_t monotonic_ns, int64_t realtime_ns);

  // Writing fails for good at the first refused write (ENOSPC, EIO): what was written before
  // stays a readable trace, nothing more is written, status() and finish() tell why.
  void flush();                          // write everything buffered as one block
  void flush_if_due(uint64_t now_ts);    // flush if chunk_interval_ns passed since the last
  [[nodiscard]] result<void> finish();   // flush, then the footer and fsync; then closed
  // Closes the file and removes it, whatever was written: for an output that is worth
  // nothing unfinished (a transform's), where a recording keeps its readable prefix.
  void abandon();
  result<void> status() const;

  const trace_summary& summary() const;
  uint64_t file_bytes() const;           // bytes written to the file so far
  const std::string& path() const;

 private:
  explicit trace_writer(std::unique_ptr<trace_writer_state> m);
  std::unique_ptr<trace_writer_state> impl_;
};

}  // namespace fsrr
