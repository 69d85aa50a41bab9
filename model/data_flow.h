// Where replayed bytes come from. A trace holds no contents, so replay makes them up, but a
// copy copies: the bytes a write puts into a file are the bytes its thread read before, from
// a file or through pipes and sockets from another process's reads, where the recorded sizes
// and offsets say so; only writes with no such source get fresh bytes.
//
// Every byte is named by the data generator's output: data_source::fill(key, offset). A file
// of the initial tree holds fill(content_key(its path), offset) (prepare writes that); a
// write with no source, fill(the key of the handle it went through, the file offset). So what
// a file holds at any point of the trace is a list of such pieces, worked out here from the
// events alone, in trace order: the replay writes them (the same bytes whatever the replay
// threads' timing), and verify --content reads them back.
//
// How a write finds its source, among the bytes its thread read from files and devices and
// the bytes waiting in the pipes and sockets it reads:
//  1. a copy: the first piece read at the write's own offset from a file whose size was the
//     size the destination reaches (rsync, tar x, cat a > b, a dd of a whole file); what lies
//     before it — a program's configuration, a library's header — is dropped;
//  2. a pair: the thread's last data op was a read of exactly as many bytes, now written (read
//     N, write N: dd bs=N, cat a b > c; from a pipe, past what the writer read of the system's
//     files);
//  3. none: fresh bytes.
// A pipe or socket carries what its writer read from files and devices, all of it (a stream
// holds data among bytes of the program's own making); what a reader takes out of it goes
// into files only (a process that passes a pipe's bytes on to another pipe is not followed).
// copy_file_range, sendfile and clones copy in the kernel and here alike.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "content_map.h"
#include "event.h"
#include "fd_map.h"
#include "trace_reader.h"

namespace fsrr {

// Bytes written, by where they came from, and bytes through pipes and sockets (which are not
// file-system bytes: never in bytes_read / bytes_written).
struct flow_stats {
  uint64_t copied = 0;           // from what the writing thread read (itself, or via streams)
  uint64_t in_kernel = 0;        // copy_file_range, sendfile, clones: copied by the kernel
  uint64_t zeros = 0;            // from /dev/zero
  uint64_t generated = 0;        // no source: fresh data (a log, a database, /dev/urandom)
  uint64_t unmatched_sizes = 0;  // generated although the thread held bytes it had read:
                                 // their sizes and offsets did not line up with the write's
  uint64_t unmatched_no_writer = 0;  // generated after reading a pipe or socket whose other
                                     // end the trace does not have (stdin from outside)
  uint64_t dropped = 0;              // read, and never written anywhere (configuration files)
  uint64_t pipe_bytes = 0;           // written into pipes and FIFOs
  uint64_t socket_bytes = 0;         // written into Unix sockets
  uint64_t device_bytes = 0;         // read from character devices
};

class data_flow {
 public:
  // Reads the trace once, for how large each file gets and which files are read. With
  // `all_contents`, every file's content is kept (verify); without, only of the files the
  // trace reads or copies from later (a replay: what a copy's destination holds is not
  // looked at again).
  explicit data_flow(trace_reader& trace, bool all_contents = true);
  ~data_flow();
  data_flow(const data_flow&) = delete;
  data_flow& operator=(const data_flow&) = delete;

  // Every event, in trace order, after fd_map::apply (whose effect `fx` is). A write's
  // sources land in `out` (cleared first); empty means fresh bytes from the handle's key.
  void apply(const event& e, const fd_effect& fx, const fd_map& fds, source_list* out = nullptr);

  const flow_stats& stats() const { return stats_; }
  // What file `f` holds at this point of the trace; nullptr if the trace never changed it (its
  // initial content, if it had one: initial()).
  const content_map* content(file_id f) const;
  // A file of the initial tree: its content key and size; {0, 0} for any other.
  std::pair<uint64_t, uint64_t> initial(file_id f) const;
  // What file `f` holds at [at, at + length) at this point of the trace (nothing for a file the
  // trace does not know), and its size.
  void pieces_of(file_id f, uint64_t at, uint64_t length, source_list& out) const;
  uint64_t size_of(file_id f) const;

 private:
  struct held;
  struct thread_state;
  struct stream_state;
  using queue = std::deque<held>;

  content_map& changed(file_id f);  // its map, made from the initial content at first change
  bool tracked(file_id f) const {
    return f != no_id && (all_contents_ || (f < read_.size() && read_[f]));
  }
  void first_sight(file_id f, path_id p);
  thread_state& thread(thread_id t);
  stream_state& stream(file_id s);
  bool system_file(path_id p);  // beneath /usr, /etc, ... (system_paths.h), answers cached
  void push(queue& q, uint64_t& bytes, held h);
  void drop_front(queue& q, uint64_t& bytes, size_t count);
  void read_file(thread_state& t, const event& e, file_id f, uint64_t at, path_id path);
  void read_stream(thread_state& t, const event& e);
  void write_stream(thread_state& t, const event& e);
  void write_file(thread_state& t, const event& e, uint64_t key, source_list& out);
  void copy_in_kernel(file_id from, uint64_t from_at, file_id to, uint64_t to_at, uint64_t n);
  bool take_copy(thread_state& t, file_id dest, uint64_t at, uint64_t n, source_list& out);
  bool take_pair(thread_state& t, uint64_t n, source_list& out);
  static bool holds_data(const queue& q);  // bytes of a user's file, not yet written
  // Takes up to `n` bytes from the front of `q` while they continue the front piece's file
  // (run) or whatever they are (any); returns the bytes taken.
  uint64_t take(queue& q, uint64_t& bytes, uint64_t n, bool run, source_list& out);

  trace_reader& trace_;
  const bool all_contents_;
  std::vector<bool> read_;  // by file id: read or copied from somewhere in the trace
  std::vector<uint64_t> reaches_;                  // by file id: the largest size it gets
  // Tree entries as 1 + their index in trace_.tree(), 0 for none:
  std::vector<uint32_t> initial_entry_;  // by file id: its initial contents
  std::vector<uint32_t> by_path_;        // by path id: tree files no event has named yet
  std::optional<tree_entry> initial_entry(file_id f) const;
  std::vector<bool> seen_;                  // by file id: named by an event
  std::vector<std::unique_ptr<content_map>> changed_;  // by file id
  std::vector<std::unique_ptr<thread_state>> threads_;
  std::unordered_map<file_id, std::unique_ptr<stream_state>> streams_;
  std::vector<uint8_t> system_;  // by path id: 0 unknown, 1 no, 2 yes
  flow_stats stats_;
};

// The data flow of a whole trace, as a replay would find it (info's "data_flow").
result<flow_stats> trace_flow(trace_reader& trace);  // fails on damaged events

}  // namespace fsrr
