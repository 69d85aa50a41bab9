// How a trace writer (trace_writer.h) cuts, compresses and times what it writes.
#pragma once

#include <cstdint>

#include "event.h"

namespace fsrr {

struct writer_options {
  // Larger chunks compress better (a copy repeats itself): 256k events of a real rsync take
  // 2.76 bytes/event where 64k take 2.90 and 16k 3.09. They cost the reader ~25 MB each.
  uint32_t chunk_events = 262144;            // flush after this many events...
  uint32_t chunk_bytes = 8u << 20;           // ...or this many encoded bytes...
  uint64_t chunk_interval_ns = 1000000000;   // ...or when flush_if_due sees this much time pass
  uint32_t tree_entries = 65536;             // tree entries per block
  int zstd_level = 5;  // 3 costs 4% more bytes on a real rsync; 7, 60 ns more per event
  // Event times are rounded down to multiples of this (the entry time and the exit time each,
  // so an op that ended before another began still does). 16 ns: a real rsync's trace takes
  // 2.5 bytes an event where 1 ns takes 3.2; 1 keeps times as given.
  uint32_t time_unit_ns = 16;
  bool overwrite = false;                    // replace an existing file
};

// What the writer does to an event's times: its entry and its exit each rounded down to a
// multiple of `unit` ns (writer_options::time_unit_ns).
inline void round_times(event& e, uint64_t unit) {
  if (unit <= 1) return;
  const uint64_t end = (e.dur > UINT64_MAX - e.ts ? UINT64_MAX : e.ts + e.dur) / unit * unit;
  e.ts = e.ts / unit * unit;
  e.dur = end - e.ts;
}

}  // namespace fsrr
