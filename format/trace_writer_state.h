// The state of a trace being written (trace_writer.h), private to format/: its tables, the open
// chunk, the pending tree and counters. trace_writer.cc takes what the caller hands it;
// trace_writer_blocks.cc lays a block, the header and the footer out in FlatBuffers.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "column_codec.h"
#include "event.h"
#include "result.h"
#include "summary.h"
#include "tables.h"
#include "trace_generated.h"
#include "trace_reader.h"
#include "writer_options.h"

namespace fsrr {

// All of `data` written to fd (`path` for the error line).
inline result<void> write_all(int fd, const std::string& path, std::span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failure("{}: write: {}", path, std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

// Bytes of pending, not yet written, table entries and tree data.
struct pending_defs {
  path_id path_first = 0;
  std::vector<uint32_t> path_parent, path_name_len;
  std::vector<uint8_t> path_names;
  string_id string_first = 0;
  std::vector<uint32_t> string_len;
  std::vector<uint8_t> string_bytes;
  file_id file_first = 0;
  std::vector<uint64_t> file_dev, file_ino;
  std::vector<uint32_t> file_gen, file_type;
  std::vector<uint16_t> file_host;  // written only when one is not 0 (a merged trace)
  bool file_hosts = false;
  thread_id thread_first = 0;
  std::vector<int32_t> thread_tid, thread_pid, thread_ppid, thread_host_tid, thread_host_pid;
  std::vector<uint32_t> thread_comm, thread_fd_table, thread_root;
  std::vector<uint16_t> thread_host;
  bool thread_hosts = false;
  uint32_t root_first = 0;
  std::vector<uint32_t> root_top, root_where;
  std::vector<uint64_t> root_mnt_ns, root_dev, root_ino;

  bool empty() const {
    return path_parent.empty() && string_len.empty() && file_dev.empty() && thread_tid.empty() &&
           root_top.empty();
  }
  size_t bytes() const {
    return path_names.size() + path_parent.size() * 8 + string_bytes.size() +
           string_len.size() * 4 + file_dev.size() * 24 + thread_tid.size() * 20;
  }
};

struct trace_writer_state {
  std::string path;
  int fd = -1;
  writer_options opt;
  bool finished = false;
  // The first failure (a write refused, say ENOSPC): nothing is written after it, so the
  // file stays a readable prefix; finish() returns it.
  result<void> status;
  uint64_t file_offset = 0;
  uint32_t seq = 0;

  // tables (ids are dense from 1)
  // Bounded: see flat_intern and bounded_intern. Paths and files churned through by a long
  // workload (rsync's temporary names, a build's objects) must not grow the recorder without
  // end.
  flat_intern<path_keys> path_ids{1u << 17};
  uint32_t paths = 0;
  bounded_intern<std::string, string_id> string_ids{1u << 16};
  uint32_t strings = 0;
  flat_intern<file_keys> file_ids{1u << 17};
  uint32_t files = 0;
  uint32_t threads = 0;
  uint32_t roots = 0;
  std::vector<path_id> root_tops;  // of roots 2, 3, ...
  std::set<std::pair<uint16_t, int32_t>> pids;  // (host, pid)
  pending_defs defs;
  uint64_t last_dev = 0, last_ino = 0;  // of the previous new file in this block
  path_id last_parent = 0;              // of the previous new path in this block

  // the open chunk
  std::vector<codec::group_encoder> groups;
  std::unordered_map<thread_id, size_t> group_of;
  uint32_t chunk_events = 0;
  uint32_t chunk_limit = 0;  // grows to opt.chunk_events: a reader's first event comes fast
  uint64_t time_unit = 1;    // event times are rounded down to multiples of it
  size_t chunk_bytes = 0;
  uint64_t chunk_min_ts = 0, chunk_max_ts = 0;
  uint64_t last_flush_ts = 0;

  std::vector<tree_entry> tree;
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> link_groups;  // (dev, ino) -> group
  std::map<uint32_t, uint64_t> lost;
  std::map<std::pair<op, fd_kind>, uint64_t> nonfile;
  uint64_t incomplete = 0;
  uint64_t pauses = 0, paused_ns = 0, filtered = 0;
  std::vector<fb::ClockPair> clocks;

  std::vector<fb::BlockRef> blocks;
  trace_summary sum;

  void write_frame(std::span<const uint8_t> frame) {
    if (!status) return;
    status = write_all(fd, path, frame);
    if (status) file_offset += frame.size();
  }

  bool pending() const {
    return chunk_events || !tree.empty() || !defs.empty() || !lost.empty() || !nonfile.empty() ||
           incomplete || !clocks.empty() || pauses || paused_ns || filtered;
  }

  path_id new_path(path_id parent, std::string_view name) {
    const path_id id = ++paths;
    if (defs.path_parent.empty()) defs.path_first = id;
    defs.path_parent.push_back(parent - last_parent);  // siblings come together: mostly 0
    last_parent = parent;
    defs.path_name_len.push_back(static_cast<uint32_t>(name.size()));
    defs.path_names.insert(defs.path_names.end(), name.begin(), name.end());
    return id;
  }

  void write_header(const header_info& h);
  void write_block();
  flatbuffers::Offset<fb::Defs> build_defs(flatbuffers::FlatBufferBuilder& fbb);
  flatbuffers::Offset<fb::Chunk> build_chunk(flatbuffers::FlatBufferBuilder& fbb);
  flatbuffers::Offset<fb::Counters> build_counters(flatbuffers::FlatBufferBuilder& fbb);
  void write_footer();
};

}  // namespace fsrr
