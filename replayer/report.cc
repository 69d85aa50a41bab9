#include "report.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedule.h"

namespace fsrr {

uint64_t latency_histogram::upper_edge(size_t b) {
  if (b < (1u << sub_bits)) return b;
  const size_t shift = (b >> sub_bits) - 1;
  const uint64_t top = (b & ((1u << sub_bits) - 1)) + (1u << sub_bits);
  return shift >= 63 ? UINT64_MAX : ((top + 1) << shift) - 1;
}

void latency_histogram::merge(const latency_histogram& o) {
  if (o.count_ == 0) return;
  if (counts_.empty()) counts_.resize(bucket_count);
  for (size_t i = o.lo_; i <= o.hi_; ++i) counts_[i] += o.counts_[i];
  note_bucket(o.lo_);
  note_bucket(o.hi_);
  count_ += o.count_;
  sum_ += o.sum_;
  max_ = std::max(max_, o.max_);
}

uint64_t latency_histogram::percentile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  uint64_t seen = 0;
  for (size_t i = lo_; i <= hi_; ++i) {
    seen += counts_[i];
    if (seen >= std::max<uint64_t>(rank, 1)) return std::min(upper_edge(i), max_);
  }
  return max_;
}

nlohmann::json latency_histogram::to_wire() const {
  nlohmann::json b = nlohmann::json::array();
  for (size_t i = lo_; i <= hi_; ++i)
    if (counts_[i]) b.push_back({i, counts_[i]});
  return {{"b", std::move(b)}, {"max", max_}, {"sum", sum_}};
}

latency_histogram latency_histogram::from_wire(const nlohmann::json& j) {
  latency_histogram h;
  for (const auto& b : j.at("b")) {
    const auto i = b.at(0).get<size_t>();
    const auto n = b.at(1).get<uint64_t>();
    if (i >= bucket_count || n == 0) continue;
    if (h.counts_.empty()) h.counts_.resize(bucket_count);
    h.counts_[i] += n;
    h.note_bucket(i);
    h.count_ += n;
  }
  h.max_ = j.at("max").get<uint64_t>();
  h.sum_ = j.at("sum").get<uint64_t>();
  return h;
}

void op_stats::merge(const op_stats& o) {
  count += o.count;
  errors += o.errors;
  mismatches += o.mismatches;
  differences += o.differences;
  latency.merge(o.latency);
  recorded.merge(o.recorded);
  for (const auto& [e, n] : o.errnos) errnos[e] += n;
}

void replay_stats::merge(const replay_stats& o, size_t max_listed) {
  events += o.events;
  for (size_t i = 0; i < op_count; ++i) {
    ops[i].merge(o.ops[i]);
    skipped[i] += o.skipped[i];
    unreplayable[i] += o.unreplayable[i];
  }
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  files += o.files;
  mismatches += o.mismatches;
  differences += o.differences;
  for (size_t c = 0; c < by_cause.size(); ++c) by_cause[c] += o.by_cause[c];
  first_mismatches.insert(first_mismatches.end(), o.first_mismatches.begin(),
                          o.first_mismatches.end());
  std::sort(first_mismatches.begin(), first_mismatches.end(),
            [](const mismatch& a, const mismatch& b) { return a.seq < b.seq; });
  if (first_mismatches.size() > max_listed) first_mismatches.resize(max_listed);
  lateness.merge(o.lateness);
  op_bound_lateness.merge(o.op_bound_lateness);
  if (timeline.size() < o.timeline.size()) timeline.resize(o.timeline.size());
  for (size_t i = 0; i < o.timeline.size(); ++i) {
    timeline[i].ops += o.timeline[i].ops;
    timeline[i].bytes_read += o.timeline[i].bytes_read;
    timeline[i].bytes_written += o.timeline[i].bytes_written;
  }
  if (stopped.empty()) stopped = o.stopped;
  remote_waits += o.remote_waits;
  realtime_threads += o.realtime_threads;
  short_slice_threads += o.short_slice_threads;
  spread_threads += o.spread_threads;
  cpu_moves += o.cpu_moves;
  for (size_t i = 0; i < engines.size(); ++i) engines[i].merge(o.engines[i]);
  if (!started_ns) started_ns = o.started_ns;
}

namespace {

nlohmann::json engines_json(const std::array<engine_stats, 4>& engines) {
  auto mean = [](uint64_t sum, uint64_t n) { return n ? static_cast<double>(sum) / n : 0.0; };
  nlohmann::json j = nlohmann::json::object();
  const char* names[] = {nullptr, "io_uring", "aio", "mapped"};
  for (size_t i = 1; i < engines.size(); ++i) {
    const engine_stats& e = engines[i];
    j[names[i]] = {{"requests", e.requests},
                   {"submits", e.submits},
                   {"as_syscalls", e.as_syscalls},
                   {"fixed_buffers", e.fixed_buffers},
                   {"max_in_flight", e.max_in_flight},
                   {"mean_in_flight", mean(e.in_flight_sum, e.requests)},
                   {"recorded_max_in_flight", e.recorded_max_in_flight},
                   {"recorded_mean_in_flight", mean(e.recorded_in_flight_sum, e.requests)}};
  }
  return j;
}

}  // namespace

double mib_per_s(uint64_t bytes, uint64_t wall_ns) {
  if (wall_ns == 0) return 0;
  return static_cast<double>(bytes) / (1024.0 * 1024.0) / (static_cast<double>(wall_ns) / 1e9);
}

namespace {

double per_s(uint64_t n, uint64_t wall_ns) {
  return wall_ns ? static_cast<double>(n) / (static_cast<double>(wall_ns) / 1e9) : 0;
}

nlohmann::json quantiles(const latency_histogram& h) {
  return {{"p50", h.percentile(0.50)}, {"p99", h.percentile(0.99)}, {"max", h.max()}};
}

nlohmann::json counts(const std::array<uint64_t, op_count>& a) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < op_count; ++i)
    if (a[i]) j[std::string(name(static_cast<op>(i)))] = a[i];
  return j;
}

std::string result_text(int64_t r) {
  if (r >= 0) return std::to_string(r);
  const char* n = strerrorname_np(static_cast<int>(-r));
  return n ? n : fmt::format("errno {}", -r);
}

std::string us(uint64_t ns) {
  if (ns < 10'000) return fmt::format("{:.1f}", static_cast<double>(ns) / 1e3);
  return fmt::format("{:.0f}", static_cast<double>(ns) / 1e3);
}

// "data compress:3: ratio zstd 3.01, lzo 2.10"
std::string data_line(const replay_report& r) {
  return fmt::format(
      "data {}: ratio zstd {:.2f}, lzo {}\n", r.data, r.data_ratio_zstd,
      r.data_ratio_lzo > 0 ? fmt::format("{:.2f}", r.data_ratio_lzo) : std::string("not measured"));
}

}  // namespace

std::string report_json(const replay_report& r) {
  const replay_stats& s = r.replay;
  nlohmann::json j;
  j["trace"] = r.trace;
  j["target"] = r.target;
  j["timing"] = r.timing;
  j["speed"] = r.speed;
  j["data"] = {
      {"spec", r.data}, {"ratio_zstd", r.data_ratio_zstd}, {"ratio_lzo", r.data_ratio_lzo}};
  j["complete"] = r.trace_complete;
  j["wall_ns"] = s.wall_ns;
  j["prepare"] = {{"files", r.prepare.files},       {"dirs", r.prepare.dirs},
                  {"symlinks", r.prepare.symlinks}, {"bytes", r.prepare.bytes},
                  {"wall_ns", r.prepare.wall_ns},   {"errors", r.prepare.errors},
                  {"withheld", r.prepare.withheld}};
  j["events"] = s.events;
  j["threads"] = s.threads;
  j["realtime_threads"] = s.realtime_threads;
  j["short_slice_threads"] = s.short_slice_threads;
  j["spread_threads"] = s.spread_threads;
  j["cpu_moves"] = s.cpu_moves;
  j["engines"] = engines_json(s.engines);
  nlohmann::json ops = nlohmann::json::object();
  for (size_t i = 0; i < op_count; ++i) {
    const op_stats& o = s.ops[i];
    if (o.count == 0) continue;
    nlohmann::json errnos = nlohmann::json::object();
    for (const auto& [e, n] : o.errnos) {
      const char* en = e > 0 ? strerrorname_np(e) : nullptr;
      errnos[en ? en : fmt::format("errno {}", e)] = n;
    }
    ops[std::string(name(static_cast<op>(i)))] = {{"count", o.count},
                                                  {"errors", o.errors},
                                                  {"errnos", std::move(errnos)},
                                                  {"mismatches", o.mismatches},
                                                  {"differences", o.differences},
                                                  {"latency_ns", quantiles(o.latency)},
                                                  {"recorded_latency_ns", quantiles(o.recorded)}};
  }
  j["ops"] = std::move(ops);
  j["skipped"] = counts(s.skipped);
  j["unreplayable"] = counts(s.unreplayable);
  j["nonfile_ops"] = r.nonfile_ops;
  j["bytes_read"] = s.bytes_read;
  j["bytes_written"] = s.bytes_written;
  j["files"] = s.files;
  j["mib_per_s"] = mib_per_s(std::max(s.bytes_read, s.bytes_written), s.wall_ns);
  j["read_mib_per_s"] = mib_per_s(s.bytes_read, s.wall_ns);
  j["write_mib_per_s"] = mib_per_s(s.bytes_written, s.wall_ns);
  j["files_per_s"] = per_s(s.files, s.wall_ns);
  j["mismatches"] = s.mismatches;
  j["backend"] = s.backend;
  // environment-dependent results (environment.h): op -> count, and by cause
  nlohmann::json diff = nlohmann::json::object(), causes = nlohmann::json::object();
  for (size_t i = 0; i < op_count; ++i)
    if (s.ops[i].differences) diff[std::string(name(static_cast<op>(i)))] = s.ops[i].differences;
  for (size_t c = 0; c < s.by_cause.size(); ++c)
    if (s.by_cause[c]) causes[std::string(name(static_cast<env_cause>(c)))] = s.by_cause[c];
  j["differences"] = std::move(diff);
  j["differences_by_cause"] = std::move(causes);
  nlohmann::json first = nlohmann::json::array();
  for (const mismatch& m : s.first_mismatches) {
    first.push_back({{"seq", m.seq},
                     {"tid", m.tid},
                     {"op", std::string(name(m.kind))},
                     {"path", m.path},
                     {"recorded", m.recorded},
                     {"replayed", m.replayed}});
    if (!m.host.empty()) first.back()["host_name"] = m.host;  // (dump's "host" is an index)
  }
  j["first_mismatches"] = std::move(first);
  if (s.timed) {
    j["lateness_ns"] = quantiles(s.lateness);
    j["op_bound_lateness_ns"] = quantiles(s.op_bound_lateness);
  }
  // "bytes" as mib_per_s counts them: the larger of read and written
  nlohmann::json timeline = nlohmann::json::array();
  for (size_t i = 0; i < s.timeline.size(); ++i) {
    const timeline_slice& t = s.timeline[i];
    timeline.push_back({{"t_ms", i * timeline_ns / 1'000'000},
                        {"ops", t.ops},
                        {"bytes", std::max(t.bytes_read, t.bytes_written)},
                        {"bytes_read", t.bytes_read},
                        {"bytes_written", t.bytes_written}});
  }
  j["timeline"] = std::move(timeline);
  j["stopped"] = s.stopped.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.stopped);
  j["data_flow"] = flow_json(s.flow);
  if (!r.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const rank_report& k : r.ranks) {
      nlohmann::json row = {{"rank", k.rank},
                            {"host", k.host},
                            {"idle", k.idle},
                            {"events", k.events},
                            {"threads", k.threads},
                            {"backend", k.backend},
                            {"wall_ns", k.wall_ns},
                            {"clock_offset_ns", k.clock_offset_ns},
                            {"dependency_waits", k.remote_waits},
                            {"recorded_hosts", k.recorded_hosts},
                            {"open_ns", k.open_ns},
                            {"plan_ns", k.plan_ns},
                            {"peak_rss_bytes", k.peak_rss_bytes}};
      if (s.timed) row["lateness_ns"] = quantiles(k.lateness);
      ranks.push_back(std::move(row));
    }
    j["ranks"] = std::move(ranks);
    j["start_skew_ns"] = r.start_skew_ns;
    j["dependency_waits"] = s.remote_waits;
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // paths are bytes
}

nlohmann::json flow_json(const flow_stats& f) {
  return {{"written_from",
           {{"reads", f.copied},
            {"kernel_copies", f.in_kernel},
            {"dev_zero", f.zeros},
            {"generator", f.generated},
            {"unmatched", f.unmatched_sizes + f.unmatched_no_writer}}},
          {"unmatched_because",
           {{"sizes_do_not_line_up", f.unmatched_sizes},
            {"no_writer_recorded", f.unmatched_no_writer}}},
          {"read_not_written", f.dropped},
          {"stream_bytes",
           {{"pipes", f.pipe_bytes}, {"sockets", f.socket_bytes}, {"devices", f.device_bytes}}}};
}

namespace {

// Parts of one line, each after its separator (", ", "; "), broken before a part that would
// pass `width` columns: the separator's mark ends the line, and the next one starts with two
// spaces. `column` is where the first part starts (after a caller's label).
std::string wrap(const std::vector<std::pair<std::string_view, std::string>>& parts, size_t column,
                 size_t width) {
  std::string t;
  size_t at = column;
  for (const auto& [sep, part] : parts) {
    if (!t.empty() && at + sep.size() + part.size() > width) {
      const size_t mark = sep.find_last_not_of(' ');
      t.append(sep.substr(0, mark == std::string_view::npos ? 0 : mark + 1));
      t += "\n  ";
      at = 2;
    } else if (!t.empty()) {
      t += sep;
      at += sep.size();
    }
    t += part;
    at += part.size();
  }
  return t;
}

}  // namespace

std::string flow_text(const flow_stats& f, size_t column) {
  const auto mib = [](uint64_t b) { return static_cast<double>(b) / 1048576.0; };
  std::vector<std::pair<std::string_view, std::string>> parts = {
      {"", fmt::format("written from reads {:.1f} MiB", mib(f.copied))},
      {", ", fmt::format("in-kernel copies {:.1f} MiB", mib(f.in_kernel))},
      {", ", fmt::format("/dev/zero {:.1f} MiB", mib(f.zeros))},
      {", ", fmt::format("fresh {:.1f} MiB", mib(f.generated))}};
  if (f.unmatched_sizes || f.unmatched_no_writer)
    parts.emplace_back(", ", fmt::format("unmatched {:.1f} MiB (sizes {:.1f}, no writer {:.1f})",
                                         mib(f.unmatched_sizes + f.unmatched_no_writer),
                                         mib(f.unmatched_sizes), mib(f.unmatched_no_writer)));
  if (f.pipe_bytes || f.socket_bytes) {
    parts.emplace_back("; ", fmt::format("through pipes {:.1f} MiB", mib(f.pipe_bytes)));
    parts.emplace_back(", ", fmt::format("sockets {:.1f} MiB", mib(f.socket_bytes)));
  }
  return wrap(parts, column, summary_width);
}

// "io_uring: 2176 requests in 1320 submits, in flight mean 7.6 (recorded 7.9), max 8 (8)"
static std::string engines_text(const std::array<engine_stats, 4>& engines) {
  std::string t;
  const char* names[] = {nullptr, "io_uring", "aio", "mapped"};
  for (size_t i = 1; i < engines.size(); ++i) {
    const engine_stats& e = engines[i];
    if (!e.requests && !e.as_syscalls) continue;
    std::vector<std::pair<std::string_view, std::string>> parts;
    if (i == static_cast<size_t>(engine::mapped)) {
      parts.emplace_back("", fmt::format("{}: {} pages stored through mappings", names[i],
                                         e.requests));
    } else {
      const double n = static_cast<double>(std::max<uint64_t>(e.requests, 1));
      parts.emplace_back("", fmt::format("{}: {} requests in {} submits", names[i], e.requests,
                                         e.submits));
      parts.emplace_back(", ", fmt::format("in flight mean {:.1f} (recorded {:.1f})",
                                           static_cast<double>(e.in_flight_sum) / n,
                                           static_cast<double>(e.recorded_in_flight_sum) / n));
      parts.emplace_back(", ", fmt::format("max {} ({})", e.max_in_flight,
                                           e.recorded_max_in_flight));
    }
    if (e.fixed_buffers)
      parts.emplace_back(", ", fmt::format("{} through registered buffers", e.fixed_buffers));
    if (e.as_syscalls)
      parts.emplace_back(", ", fmt::format("{} as syscalls", e.as_syscalls));
    t += wrap(parts, 0, summary_width) + "\n";
  }
  return t;
}

result<void> write_report_json(const replay_report& r, const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (out) out << report_json(r) << '\n';
  out.close();
  if (!out) return failure("report {}: {}", path, std::strerror(errno));
  return {};
}

// Lateness at p99 beyond what the ops force, above which the summary points at --realtime:
// the 200 us that bench/replay_lateness.sh allows a faithful replay's whole p99, here as the
// margin over what the ops account for.
constexpr uint64_t hint_above_ns = 200'000;

std::string report_table(const replay_report& r) {
  const replay_stats& s = r.replay;
  std::string t;
  const double secs = static_cast<double>(s.wall_ns) / 1e9;
  const bool any_op =
      std::any_of(s.ops.begin(), s.ops.end(), [](const op_stats& o) { return o.count; });
  if (s.events == 0 && !any_op && s.stopped.empty()) {  // a tree-only trace: prepare was the job
    t += fmt::format("written {:.1f} MiB, {:.1f} MiB/s, {} files, {:.0f} files/s\n",
                     static_cast<double>(s.bytes_written) / 1048576.0,
                     mib_per_s(s.bytes_written, s.wall_ns), s.files, per_s(s.files, s.wall_ns));
    if (!r.data.empty()) t += data_line(r);
    return t;
  }
  std::vector<std::pair<std::string_view, std::string>> how = {
      {"", fmt::format("replayed {} events on {} thread{} in {:.3f} s ({}, speed {}", s.events,
                       s.threads, s.threads == 1 ? "" : "s", secs, r.timing, r.speed)}};
  if (s.realtime_threads)
    how.push_back({", ", "SCHED_FIFO"});
  else if (s.short_slice_threads)
    how.push_back({", ", fmt::format("{} us slices", replay_slice_ns / 1000)});
  if (s.cpu_moves) how.push_back({", ", fmt::format("{} CPU moves", s.cpu_moves)});
  how.back().second += ")";
  t += wrap(how, 0, summary_width) + "\n";
  t += fmt::format("read {:.1f} MiB, written {:.1f} MiB, {:.1f} MiB/s, {} files, {:.0f} files/s\n",
                   static_cast<double>(s.bytes_read) / 1048576.0,
                   static_cast<double>(s.bytes_written) / 1048576.0,
                   mib_per_s(std::max(s.bytes_read, s.bytes_written), s.wall_ns), s.files,
                   per_s(s.files, s.wall_ns));
  if (!r.data.empty()) t += data_line(r);
  t += flow_text(s.flow) + "\n";
  t += engines_text(s.engines);
  t += fmt::format("\n{:<18}{:>9}{:>8}{:>9}  {:>8}{:>8}{:>9}  {:>8}{:>8}{:>9}\n", "op", "count",
                   "errors", "mismatch", "p50 us", "p99 us", "max us", "rec p50", "rec p99",
                   "rec max");
  for (size_t i = 0; i < op_count; ++i) {
    const op_stats& o = s.ops[i];
    if (o.count == 0) continue;
    t += fmt::format("{:<18}{:>9}{:>8}{:>9}  {:>8}{:>8}{:>9}  {:>8}{:>8}{:>9}\n",
                     name(static_cast<op>(i)), o.count, o.errors, o.mismatches,
                     us(o.latency.percentile(0.5)), us(o.latency.percentile(0.99)),
                     us(o.latency.max()), us(o.recorded.percentile(0.5)),
                     us(o.recorded.percentile(0.99)), us(o.recorded.max()));
  }
  uint64_t skipped = 0, unreplayable = 0;
  for (size_t i = 0; i < op_count; ++i) {
    skipped += s.skipped[i];
    unreplayable += s.unreplayable[i];
  }
  if (skipped || unreplayable || r.nonfile_ops)
    t += "\n" +
         wrap({{"", fmt::format("not replayed: {} modelled (process, fd table)", skipped)},
               {", ", fmt::format("{} engine calls (mmap, io_uring_enter, io_submit)",
                                  unreplayable)},
               {", ", fmt::format("{} on pipes/sockets/ttys", r.nonfile_ops)}},
              0, summary_width) +
         "\n";
  if (s.timed)
    t += wrap({{"", fmt::format("lateness: p50 {} us, p99 {} us, max {} us",
                                us(s.lateness.percentile(0.5)), us(s.lateness.percentile(0.99)),
                                us(s.lateness.max()))},
               {" ", fmt::format("(its ops' own durations force p99 {} us, max {} us)",
                                 us(s.op_bound_lateness.percentile(0.99)),
                                 us(s.op_bound_lateness.max()))}},
              0, summary_width) +
         "\n";
  // What the ops do not explain is the replay's threads waiting for a CPU, mostly: a wake-up
  // that comes late, and the ops after it, which follow each other as closely as they did.
  // Not so when ops waited for another rank's (MPI): that wait is the link's.
  if (s.timed && !s.realtime_threads && !s.remote_waits &&
      s.lateness.percentile(0.99) > s.op_bound_lateness.percentile(0.99) + hint_above_ns)
    t += "  the rest is mostly threads waiting for a CPU: --realtime (SCHED_FIFO threads) "
         "often lowers it\n";
  if (s.differences) {
    std::string causes;
    for (size_t c = 0; c < s.by_cause.size(); ++c)
      if (s.by_cause[c])
        causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", s.by_cause[c],
                              name(static_cast<env_cause>(c)));
    t += fmt::format("differences: {} (results of where it ran, not mismatches: {})\n",
                     s.differences, causes);
  }
  if (!r.ranks.empty()) {
    t += fmt::format(
        "\n{} ranks, start skew {} us, {} waits for another rank's op\n", r.ranks.size(),
        us(static_cast<uint64_t>(std::max<int64_t>(r.start_skew_ns, 0))), s.remote_waits);
    t += fmt::format("{:<6}{:<20}{:>10}{:>8}{:>9}{:>9}{:>8}{:>12}{:>8}", "rank", "host", "events",
                     "threads", "start s", "wall s", "RSS MiB", "offset us", "waits");
    t += s.timed ? fmt::format("{:>9}{:>9}{:>9}\n", "late p50", "p99", "max") : "\n";
    for (const rank_report& k : r.ranks) {
      t += fmt::format("{:<6}{:<20}{:>10}{:>8}{:>9.3f}{:>9.3f}{:>8.0f}{:>12.1f}{:>8}", k.rank,
                       k.host, k.events, k.threads,
                       static_cast<double>(k.open_ns + k.plan_ns) / 1e9,
                       static_cast<double>(k.wall_ns) / 1e9,
                       static_cast<double>(k.peak_rss_bytes) / (1 << 20),
                       static_cast<double>(k.clock_offset_ns) / 1e3, k.remote_waits);
      if (s.timed)
        t += fmt::format("{:>9}{:>9}{:>9}", us(k.lateness.percentile(0.5)),
                         us(k.lateness.percentile(0.99)), us(k.lateness.max()));
      t += k.idle ? "  idle: no process of the trace\n" : "\n";
    }
  }
  t += fmt::format("mismatches: {}\n", s.mismatches);
  for (const mismatch& m : s.first_mismatches)
    t += fmt::format("  #{} tid {}{} {} {}: recorded {}, replayed {}\n", m.seq,
                     m.host.empty() ? "" : m.host + ":", m.tid, name(m.kind), m.path,
                     result_text(m.recorded), result_text(m.replayed));
  if (!s.stopped.empty()) t += fmt::format("stopped early: {}\n", s.stopped);
  return t;
}

}  // namespace fsrr
