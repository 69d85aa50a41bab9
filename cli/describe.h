// Events and tree entries as text: a strace-like line for people, a JSON object for tools.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "event.h"
#include "trace_reader.h"

namespace fsrr {

// "12.345678 [4242] openat("/src/a", O_RDONLY|O_CLOEXEC) = 3 <0.000004>"
std::string describe(trace_reader& trace, const event& e);
// Only the fields the op carries, plus ts, dur, tid, pid, op, result (and errno on failure).
nlohmann::json to_json(trace_reader& trace, const event& e);
nlohmann::json to_json(trace_reader& trace, const tree_entry& e);

std::string open_flags_text(uint32_t flags);

// j as JSON text. Names in a trace are bytes: what is not UTF-8 becomes U+FFFD (JSON has no
// way to carry raw bytes), never an exception.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `fsrr info`: the docs/design.md keys (format_version, complete, duration_ns, events, lost_events,
// ops, processes, threads, files, bytes_read, bytes_written, trace_bytes, tree) and more.
nlohmann::json info_json(trace_reader& trace);
std::string info_text(trace_reader& trace);

}  // namespace fsrr
