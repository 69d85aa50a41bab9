#include "stats_wire.h"

#include <nlohmann/json.hpp>

namespace fsrr::mpi {

using nlohmann::json;

std::vector<uint8_t> to_wire(const rank_result& r) {
  const replay_stats& s = r.stats;
  json ops = json::array();
  for (size_t i = 0; i < op_count; ++i) {
    const op_stats& o = s.ops[i];
    if (!o.count && !o.errors && !o.mismatches && !o.differences && !o.latency.count() &&
        !o.recorded.count() && o.errnos.empty())
      continue;
    json errnos = json::array();
    for (const auto& [e, n] : o.errnos) errnos.push_back({e, n});
    ops.push_back({{"op", i},
                   {"count", o.count},
                   {"errors", o.errors},
                   {"mismatches", o.mismatches},
                   {"differences", o.differences},
                   {"latency", o.latency.to_wire()},
                   {"recorded", o.recorded.to_wire()},
                   {"errnos", std::move(errnos)}});
  }
  json first = json::array();
  for (const mismatch& m : s.first_mismatches)
    first.push_back(
        {m.seq, m.tid, static_cast<size_t>(m.kind), m.path, m.recorded, m.replayed, m.host});
  json timeline = json::array();
  for (const timeline_slice& t : s.timeline)
    timeline.push_back({t.ops, t.bytes_read, t.bytes_written});
  json engines = json::array();
  for (const engine_stats& e : s.engines)
    engines.push_back({e.requests, e.submits, e.in_flight_sum, e.max_in_flight,
                       e.recorded_in_flight_sum, e.recorded_max_in_flight, e.as_syscalls,
                       e.fixed_buffers});
  const json j = {{"rank", r.rank},
                  {"host", r.host},
                  {"idle", r.idle},
                  {"offset", r.clock_offset_ns},
                  {"recorded_hosts", r.recorded_hosts},
                  {"open_ns", r.open_ns},
                  {"plan_ns", r.plan_ns},
                  {"peak_rss_bytes", r.peak_rss_bytes},
                  {"wall_ns", s.wall_ns},
                  {"events", s.events},
                  {"threads", s.threads},
                  {"realtime_threads", s.realtime_threads},
                  {"short_slice_threads", s.short_slice_threads},
                  {"spread_threads", s.spread_threads},
                  {"cpu_moves", s.cpu_moves},
                  {"engines", std::move(engines)},
                  {"ops", std::move(ops)},
                  {"skipped", s.skipped},
                  {"unreplayable", s.unreplayable},
                  {"bytes_read", s.bytes_read},
                  {"bytes_written", s.bytes_written},
                  {"files", s.files},
                  {"mismatches", s.mismatches},
                  {"differences", s.differences},
                  {"by_cause", s.by_cause},
                  {"first", std::move(first)},
                  {"timed", s.timed},
                  {"backend", s.backend},
                  {"lateness", s.lateness.to_wire()},
                  {"op_bound_lateness", s.op_bound_lateness.to_wire()},
                  {"timeline", std::move(timeline)},
                  {"stopped", s.stopped},
                  {"remote_waits", s.remote_waits},
                  {"started_ns", s.started_ns}};
  return json::to_cbor(j);
}

result<rank_result> from_wire(const std::vector<uint8_t>& bytes) {
  try {
    const json j = json::from_cbor(bytes);
    rank_result r;
    r.rank = j.at("rank");
    r.host = j.at("host");
    r.idle = j.at("idle");
    r.clock_offset_ns = j.at("offset");
    r.recorded_hosts = j.at("recorded_hosts").get<std::vector<uint16_t>>();
    r.open_ns = j.at("open_ns");
    r.plan_ns = j.at("plan_ns");
    r.peak_rss_bytes = j.at("peak_rss_bytes");
    replay_stats& s = r.stats;
    s.wall_ns = j.at("wall_ns");
    s.events = j.at("events");
    s.threads = j.at("threads");
    s.realtime_threads = j.at("realtime_threads");
    s.short_slice_threads = j.at("short_slice_threads");
    s.spread_threads = j.at("spread_threads");
    s.cpu_moves = j.at("cpu_moves");
    const json& engines = j.at("engines");
    if (!engines.is_array() || engines.size() != s.engines.size())
      return failure("a rank's report has {} engines, not {}", engines.size(), s.engines.size());
    for (size_t i = 0; i < s.engines.size(); ++i) {
      engine_stats& e = s.engines[i];
      const json& w = engines[i];
      e.requests = w.at(0);
      e.submits = w.at(1);
      e.in_flight_sum = w.at(2);
      e.max_in_flight = w.at(3);
      e.recorded_in_flight_sum = w.at(4);
      e.recorded_max_in_flight = w.at(5);
      e.as_syscalls = w.at(6);
      e.fixed_buffers = w.size() > 7 ? w.at(7).get<uint64_t>() : 0;  // (older ranks: none)
    }
    for (const json& o : j.at("ops")) {
      const auto i = o.at("op").get<size_t>();
      if (i >= op_count) return failure("a rank's report names op {}, which is unknown", i);
      op_stats& x = s.ops[i];
      x.count = o.at("count");
      x.errors = o.at("errors");
      x.mismatches = o.at("mismatches");
      x.differences = o.at("differences");
      x.latency = latency_histogram::from_wire(o.at("latency"));
      x.recorded = latency_histogram::from_wire(o.at("recorded"));
      for (const json& e : o.at("errnos")) x.errnos[e.at(0).get<int>()] = e.at(1);
    }
    s.skipped = j.at("skipped");
    s.unreplayable = j.at("unreplayable");
    s.bytes_read = j.at("bytes_read");
    s.bytes_written = j.at("bytes_written");
    s.files = j.at("files");
    s.mismatches = j.at("mismatches");
    s.differences = j.at("differences");
    s.by_cause = j.at("by_cause");
    for (const json& m : j.at("first")) {
      const auto k = m.at(2).get<size_t>();
      if (k >= op_count) continue;
      s.first_mismatches.push_back({m.at(0), m.at(1), m.size() > 6 ? m.at(6).get<std::string>() : "",
                                    static_cast<op>(k), m.at(3), m.at(4), m.at(5)});
    }
    s.timed = j.at("timed");
    s.backend = j.at("backend");
    s.lateness = latency_histogram::from_wire(j.at("lateness"));
    s.op_bound_lateness = latency_histogram::from_wire(j.at("op_bound_lateness"));
    for (const json& t : j.at("timeline")) s.timeline.push_back({t.at(0), t.at(1), t.at(2)});
    s.stopped = j.at("stopped");
    s.remote_waits = j.at("remote_waits");
    s.started_ns = j.at("started_ns");
    return r;
  } catch (const json::exception& e) {
    return failure("a rank's report does not read: {}", e.what());
  }
}

}  // namespace fsrr::mpi
