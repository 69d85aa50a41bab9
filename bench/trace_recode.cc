// trace_recode IN OUT: read a trace and write it again with this build's writer: the same
// events (their times rounded to the writer's default unit, 16 ns), tables and tree,
// re-encoded. For comparing encodings on one recording.
#include <cstdlib>

#include <fmt/format.h>

#include "trace_error.h"
#include "trace_reader.h"
#include "trace_writer.h"

using namespace fsrr;

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fmt::print(stderr, "usage: trace_recode IN OUT [ZSTD_LEVEL]\n");
    return 2;
  }
  trace_reader r = or_throw(trace_reader::open(argv[1]));
  writer_options opt;
  opt.overwrite = true;
  if (argc == 4) opt.zstd_level = std::atoi(argv[3]);
  if (const char* n = std::getenv("CHUNK_EVENTS")) opt.chunk_events = std::atoi(n);
  trace_writer w = or_throw(trace_writer::create(argv[2], r.header(), opt));
  // Tables in id order, so that every id stays the same.
  for (size_t i = 1; i <= r.string_count(); ++i) w.intern_string(r.string(i));
  for (path_id i = root_path + 1; i <= r.path_count(); ++i)
    w.intern_child(r.path(i).parent, r.path(i).name);
  for (size_t i = 1; i <= r.file_count(); ++i) w.intern_file(r.file(i));
  for (size_t i = 1; i <= r.thread_count(); ++i) w.add_thread(r.thread(i));
  for (const auto& e : r.tree()) w.add_tree_entry(e);
  const trace_summary& s = r.summary();
  auto events = r.events();
  event e;
  while (events.next(e)) w.append(e);
  or_throw(events.status());
  w.add_lost(0, s.lost_events);
  for (const auto& [key, n] : s.nonfile) w.add_nonfile(key.first, key.second, n);
  w.mark_incomplete(s.incomplete);
  or_throw(w.finish());
  fmt::print("{} -> {}: {} -> {} bytes ({:.2f} -> {:.2f} bytes/event)\n", argv[1], argv[2],
             r.file_bytes(), w.file_bytes(), double(r.file_bytes()) / s.events,
             double(w.file_bytes()) / s.events);
  return 0;
}
