// The reader's state, shared by trace_reader.cc (frames, header, tree, summary),
// trace_reader_tables.cc (the tables the blocks define) and event_stream.cc (the time-ordered merge of the events). Not part of the public API.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "column_codec.h"
#include "container.h"
#include "fb_len.h"
#include "name_arena.h"
#include "result.h"
#include "trace_generated.h"
#include "trace_reader.h"
#include "tree_table.h"

namespace fsrr {

using container::frame_ref;

struct trace_reader::impl {
  std::string file_path;
  int fd = -1;
  const uint8_t* map = nullptr;
  size_t size = 0;

  header_info header;
  codec::op_map ops;
  std::vector<frame_ref> blocks;
  // A copy of the footer's payload: in the mapped file it starts at any byte, and FlatBuffers
  // reads its fields in place, aligned only relative to the buffer's start.
  std::vector<uint8_t> footer_payload;  // empty if the trace has no footer
  const fb::Footer* footer = nullptr;
  std::string damage;

  size_t defs_through = 0;  // blocks whose tables, tree and counters are applied
  size_t checked_tops = 0, checked_threads = 0;  // table entries validated against the roots
  struct packed_path {
    path_id parent;
    uint32_t name;  // offset in names: a trace's names end before 4 GiB
  };
  name_arena names;
  // The tables and the tree grow a chunk at a time: a vector's doubling would hold up to three
  // times a large tree's entries at its peak.
  std::deque<packed_path> paths{{no_id, 0}};  // index 0 is "none"
  std::deque<std::string> strings{1};
  // A file is 16 bytes: its device (and host) by index into devs (a trace names few), its type (S_IFMT
  // bits) in 16 bits (rsync of 300k files: 600k files, 14.4 → 9.6 MB).
  struct packed_file {
    uint64_t ino;
    uint32_t gen;
    uint16_t dev;
    uint16_t type;
  };
  std::deque<packed_file> files{packed_file{}};
  // A device is a host's (a merged trace's hosts reuse device numbers).
  std::vector<std::pair<uint16_t, uint64_t>> devs{{0, 0}};
  std::map<std::pair<uint16_t, uint64_t>, uint16_t> dev_ids{{{0, 0}, 0}};  // ordered: no hash a
                                                                          // trace can aim at
  uint16_t last_dev = 0;
  std::optional<uint16_t> dev_index(uint16_t host, uint64_t dev);
  std::deque<thread_info> threads{1};
  std::vector<trace_root> roots;            // roots[k] is root k + 1
  std::vector<uint32_t> root_of_top;        // by path id of a top (parentless path): its root
  tree_table tree;
  uint64_t lost = 0, incomplete = 0, pauses = 0, paused_ns = 0, filtered = 0;
  std::map<std::pair<op, fd_kind>, uint64_t> nonfile;
  std::vector<std::pair<uint64_t, int64_t>> clocks;  // (CLOCK_MONOTONIC, CLOCK_REALTIME) pairs

  bool summary_ready = false;
  trace_summary sum;

  impl() = default;
  ~impl();  // unmaps and closes the file
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  tl::unexpected<error> fail(const std::string& what) const {
    return failure(fmt::format("{}: {}", file_path, what));
  }
  tl::unexpected<error> fail_block(size_t i, const std::string& what) const {
    return fail(fmt::format("block {} at offset {}: {}", i, blocks[i].offset, what));
  }

  std::span<const uint8_t> bytes(const frame_ref& f) const { return {map + f.offset, f.size}; }

  result<void> open_file();
  result<void> read_header(const frame_ref& f);
  result<void> read_footer(const frame_ref& f);
  void forget(const frame_ref& f) const;  // drops its mapped pages from the process
  result<const fb::Block*> load_block(size_t i, std::vector<uint8_t>& buf) const;
  result<void> apply_block(size_t i, const fb::Block& b);
  result<void> load_tables();
  result<void> apply_defs(size_t i, const fb::Defs& d);
  result<void> apply_paths(size_t i, const fb::Defs& d);
  result<void> apply_strings(size_t i, const fb::Defs& d);
  result<void> apply_files(size_t i, const fb::Defs& d);
  result<void> apply_threads(size_t i, const fb::Defs& d);
  result<void> apply_roots(size_t i, const fb::Defs& d);
  result<void> apply_tree(size_t i, const fb::Tree& t);
  result<void> apply_counters(size_t i, const fb::Counters& c);
  result<codec::group_input> group_of(size_t i, const fb::ThreadEvents& g) const;
  result<void> check_ids(size_t i, const std::vector<event>& v) const;
  result<void> decode_chunk(size_t i, const fb::Chunk& c,
                            const std::function<void(const event&)>& each, uint64_t& unknown) const;
  result<void> compute_summary();
};

}  // namespace fsrr
