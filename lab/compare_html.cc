#include "compare_html.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace fsrr::lab {
namespace {

using nlohmann::json;
using series = std::vector<double>;  // one value per x; NaN where absent (null in the chart)

constexpr double absent = std::numeric_limits<double>::quiet_NaN();
constexpr double mib = 1024.0 * 1024.0;
constexpr size_t max_latency_ops = 8;
const std::string dash = "–";
// One colour per file system, the same in every chart and in the tables' swatches.
constexpr std::string_view palette[] = {"#3366cc", "#e07b24", "#2e9e4f", "#c0392b",
                                        "#8e5cc4", "#8c6d31", "#d0559b", "#17a2b8"};
std::string colour(size_t index) {
  return std::string(palette[index % std::size(palette)]);
}

template <typename... T>
void put(std::string& out, fmt::format_string<T...> format, T&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<T>(args)...);
}

// Missing keys, nulls and values of the wrong type all read as absent: older compare files
// lack fields, and the page must still render.
const json& at(const json& object, const std::string& key) {
  static const json none;
  if (!object.is_object()) return none;
  auto found = object.find(key);
  return found == object.end() ? none : *found;
}
double number(const json& value) {
  return value.is_number() ? value.get<double>() : absent;
}
std::string text(const json& value) {
  return value.is_string() ? value.get<std::string>() : "";
}
// The array or object at `key`, else an empty array: loops over it just do nothing.
const json& list_at(const json& object, const std::string& key) {
  static const json empty = json::array();
  const json& value = at(object, key);
  return value.is_array() || value.is_object() ? value : empty;
}

// As entities, &, <, >, " and ' are safe in text and in attribute values.
std::string escape(std::string_view raw) {
  static const std::map<char, std::string_view> entities = {
      {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"}, {'\'', "&#39;"}};
  std::string out;
  for (char c : raw) {
    auto entity = entities.find(c);
    if (entity == entities.end()) {
      out += c;
    } else {
      out += entity->second;
    }
  }
  return out;
}
std::string text_or_dash(const json& value) {
  return text(value).empty() ? dash : escape(text(value));
}

// JSON for a <script> element. JSON has '<' only inside strings, where \u003c means the same,
// so no "</script>" or "<!--" in the data can end or confuse the element.
std::string script_json(const json& value) {
  std::string out;
  for (char c : value.dump(-1, ' ', false, json::error_handler_t::replace)) {
    out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  }
  return out;
}

// The library goes in verbatim, but a "</script" (any case) in it would end the element.
std::string inline_script(const std::string& source) {
  return std::regex_replace(source, std::regex("</(script)", std::regex::icase), "<\\/$1");
}

std::string fixed(double value, int digits) {
  return std::isnan(value) ? dash : fmt::format("{:.{}f}", value, digits);
}
std::string grouped(double value) {  // 1234567 -> "1,234,567"
  if (std::isnan(value)) return dash;
  const std::string digits = fmt::format("{:.0f}", std::abs(value));
  std::string out = value <= -0.5 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}
std::string size(double bytes) {
  if (std::isnan(bytes)) return dash;
  if (bytes >= 10 * 1024 * mib) return fmt::format("{:.1f} GiB", bytes / (1024 * mib));
  return fmt::format("{:.1f} MiB", bytes / mib);
}
std::string duration(double ns) {
  if (std::isnan(ns)) return dash;
  if (ns >= 1e9) return fmt::format("{:.2f} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.1f} ms", ns / 1e6);
  return fmt::format("{:.0f} µs", ns / 1e3);
}

struct run_spread {
  double median = absent, min = absent, max = absent;
};
run_spread spread_of(const json& row, const std::string& key) {
  const json& value = at(row, key);
  if (value.is_number()) return {number(value)};
  return {number(at(value, "median")), number(at(value, "min")), number(at(value, "max"))};
}
// The median and, in small print below it, the range.
std::string median_cell(const run_spread& s, int digits, double scale = 1) {
  bool range = !std::isnan(s.min) && !std::isnan(s.max);
  return fmt::format(
      "<td class=\"num\">{}<small>{}</small></td>", fixed(s.median / scale, digits),
      range ? fixed(s.min / scale, digits) + "–" + fixed(s.max / scale, digits) : "");
}

std::string fs_name(const json& row, size_t index) {
  for (const char* key : {"name", "spec", "kind"}) {
    if (std::string name = text(at(row, key)); !name.empty()) return name;
  }
  return fmt::format("file system {}", index + 1);
}
std::string swatch(size_t index) {
  return fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>", colour(index));
}

// The command as one would type it: words with spaces or shell characters single-quoted.
std::string shell_words(const json& compare) {
  if (at(compare, "command").is_string()) return text(at(compare, "command"));
  std::string out;
  for (const json& word : list_at(compare, "command")) {
    std::string arg = word.is_string() ? word.get<std::string>() : word.dump();
    if (arg.empty() || arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789-_./=:,+@%") != std::string::npos) {
      std::string quoted = "'";
      for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = quoted + "'";
    }
    out += (out.empty() ? "" : " ") + arg;
  }
  return out;
}
std::string path_list(const json& paths) {
  std::string out;
  for (const json& path : paths)
    out += (out.empty() ? "<code>" : ", <code>") + escape(text(path)) + "</code>";
  return out.empty() ? "none" : out;
}

// A table whose first column holds labels and the others numbers; `cells` are plain text.
std::string data_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& cells) {
  const char* num = " class=\"num\"";
  std::string out = "<table>\n<thead><tr>";
  for (size_t c = 0; c < header.size(); ++c)
    put(out, "<th{}>{}</th>", c ? num : "", escape(header[c]));
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : cells) {
    out += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) put(out, "<td{}>{}</td>", c ? num : "", escape(row[c]));
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

void write_heading(std::string& out, const json& compare) {
  std::string command = shell_words(compare);
  put(out,
      "<header>\n<h1>fsrr compare{}</h1>\n<p>Trace <code>{}</code></p>\n<ul class=\"settings\">",
      command.empty() ? "" : " <code>" + escape(command) + "</code>",
      text_or_dash(at(compare, "trace")));
  for (const char* key : {"runs", "timing", "data", "repeat"}) {
    const json& value = at(compare, key);
    // compare --realtime: the replay's threads ran SCHED_FIFO
    const bool fifo = key == std::string_view("timing") && at(compare, "realtime") == true;
    put(out, "<li>{} <b>{}{}</b></li>", key,
        value.is_number() ? grouped(number(value)) : text_or_dash(value),
        fifo ? ", SCHED_FIFO" : "");
  }
  out += "</ul>\n";
  if (const json& placement = at(compare, "placement"); placement.is_object()) {
    std::string source_fs = text(at(placement, "source_fs"));
    put(out, "<p>On the file system under test: {}. On the source file system{}: {}.</p>\n",
        path_list(list_at(placement, "on_test")),
        source_fs.empty() ? "" : " (" + escape(source_fs) + ")",
        path_list(list_at(placement, "on_source")));
  }
  out += "</header>\n";
}

void write_setup(std::string& out, const json& compare, const json& rows) {
  const json& system = at(compare, "system");
  out += "<section class=\"setup\">\n<div>\n<h2>System</h2>\n<table id=\"system\">\n";
  std::pair<const char*, std::string> facts[] = {
      {"Kernel", text_or_dash(at(system, "kernel"))},
      {"CPU", text_or_dash(at(system, "cpu"))},
      {"CPUs", grouped(number(at(system, "cpus")))},
      {"Memory", size(number(at(system, "memory_bytes")))},
      {"fsrr", text_or_dash(at(system, "fsrr"))}};
  for (const auto& [name, value] : facts)
    put(out, "<tr><th>{}</th><td>{}</td></tr>\n", name, value);
  out +=
      "</table>\n</div>\n<div>\n<h2>File systems</h2>\n<table id=\"filesystems\">\n<thead><tr>"
      "<th>File system</th><th>Device</th><th>mkfs</th><th>Mount options</th><th>Tool</th>"
      "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    put(out, "<tr><td>{}{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
        swatch(i), escape(fs_name(row, i)), text_or_dash(at(row, "device")),
        text_or_dash(at(row, "mkfs")),
        at(row, "mount") == "" ? "defaults" : text_or_dash(at(row, "mount")),
        text_or_dash(at(row, "tool")));
  }
  out += "</tbody>\n</table>\n</div>\n</section>\n";
}

void write_results(std::string& out, const json& rows) {
  bool any_baseline = std::any_of(rows.begin(), rows.end(),
                                  [](const json& row) { return at(row, "baseline").is_object(); });
  // a timed compare: how late each file system replayed, and the part its own ops forced
  bool timed = std::any_of(rows.begin(), rows.end(),
                           [](const json& row) { return at(row, "lateness_ns").is_object(); });
  out += "<section>\n<h2>Results</h2>\n<table id=\"results\">\n<thead><tr><th>File system</th>";
  for (const char* title :
       {"MiB/s<small>median, min–max</small>", "files/s", "ops/s",
        "Wall time (s)<small>median, min–max</small>", "Sync time", "Space used", "Logical bytes",
        "Used / logical", "Mismatches", "Differences", "Verify"}) {
    put(out, "<th class=\"num\">{}</th>", title);
  }
  if (timed)
    out +=
        "<th class=\"num\">Lateness<small>p99</small></th>"
        "<th class=\"num\">Its ops alone<small>p99: a replayer that cost nothing</small></th>";
  out += any_baseline ? "<th class=\"num\">MiB/s vs baseline</th></tr></thead>\n<tbody>\n"
                      : "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    const json& baseline = at(row, "baseline");
    double change = number(at(baseline, "mib_per_s_change"));
    bool slower =
        at(baseline, "slower").is_boolean() ? at(baseline, "slower").get<bool>() : change < 0;
    put(out, "<tr{}><td>{}{}</td>", slower ? " class=\"slower\"" : "", swatch(i),
        escape(fs_name(row, i)));
    out += median_cell(spread_of(row, "mib_per_s"), 1);
    put(out, "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
        grouped(spread_of(row, "files_per_s").median), grouped(spread_of(row, "ops_per_s").median));
    out += median_cell(spread_of(row, "wall_ns"), 2, 1e9);
    double used = number(at(row, "space_used_bytes")), logical = number(at(row, "logical_bytes"));
    double mismatches = number(at(row, "mismatches"));
    put(out,
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num{}\">{}</td>",
        duration(spread_of(row, "sync_ns").median), size(used), size(logical),
        logical > 0 ? fixed(used / logical, 2) + "×" : dash, mismatches > 0 ? " bad" : "",
        grouped(mismatches));
    double differences = absent;
    std::string detail;
    if (const json& by_op = at(row, "differences"); by_op.is_object()) {
      differences = 0;
      for (const auto& [op, count] : by_op.items()) {
        differences += std::isnan(number(count)) ? 0 : number(count);
        detail += (detail.empty() ? "" : ", ") + escape(op) + " " + grouped(number(count));
      }
    }
    const json& verify = at(row, "verify");
    put(out, "<td class=\"num\">{}<small>{}</small></td><td class=\"num{}\">{}</td>",
        grouped(differences), detail, verify == false ? " bad" : "",
        verify.is_boolean() ? (verify == true ? "yes" : "no") : dash);
    if (timed)
      put(out, "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
          duration(number(at(at(row, "lateness_ns"), "p99"))),
          duration(number(at(at(row, "op_bound_lateness_ns"), "p99"))));
    if (any_baseline) {
      put(out, "<td class=\"num\">{}{}</td>",
          std::isnan(change) ? dash : fmt::format("{:+.1f} %", change * 100),
          slower ? " <span class=\"flag\">slower</span>" : "");
    }
    out += "</tr>\n";
  }
  if (rows.empty()) out += "<tr><td colspan=\"13\">This compare has no file systems.</td></tr>\n";
  out += "</tbody>\n</table>\n</section>\n";
}

// Where what the replay wrote lies on disk, and the age of the file system it went to: only
// when a row measured it (block file systems).
void write_layout(std::string& out, const json& rows) {
  if (std::none_of(rows.begin(), rows.end(),
                   [](const json& row) { return at(row, "layout").is_object(); }))
    return;
  out +=
      "<section>\n<h2>Age and layout</h2>\n<p>The layout score (Conway et al., FAST'17) is the "
      "share of the blocks of what the replay left, after each file's first, that follow the "
      "block before them on disk: 1 is every file in one piece. Free-space pieces are counted by "
      "the file system's own tool on the unmounted image (none for btrfs).</p>\n<table "
      "id=\"layout\">\n<thead><tr><th>File system</th><th>Age</th>";
  for (const char* title : {"Aged files", "Fill", "Free pieces<small>after aging</small>",
                            "Layout score", "Extents per file", "Extents per MiB",
                            "Free pieces<small>after the replay</small>"})
    put(out, "<th class=\"num\">{}</th>", title);
  out += "</tr></thead>\n<tbody>\n";
  const auto count = [](const json& v) { return v.is_number() ? grouped(number(v)) : dash; };
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    const json& aged = at(row, "aged");
    const json& layout = at(row, "layout");
    const json& age = at(row, "age");
    put(out,
        "<tr><td>{}{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        swatch(i), escape(fs_name(row, i)),
        age.is_string() && age != "none" ? "<code>" + escape(text(age)) + "</code>" : "fresh",
        count(at(aged, "files")),
        aged.is_object() ? fixed(number(at(aged, "fill")) * 100, 1) + " %" : dash,
        count(at(aged, "free_space_fragments")),
        layout.is_object() ? fixed(number(at(layout, "score")), 3) : dash,
        layout.is_object() ? fixed(number(at(layout, "extents_per_file")), 2) : dash,
        layout.is_object() ? fixed(number(at(layout, "extents_per_mib")), 2) : dash,
        count(at(row, "free_space_fragments")));
  }
  out += "</tbody>\n</table>\n</section>\n";
}

// A chart: its canvas's Chart.js configuration and a table with the same numbers.
struct chart {
  std::string id, title, note, aria, table;
  json config;
  int height = 300;
};

json axis(const std::string& title, const char* type = "linear") {
  return {{"type", type}, {"title", {{"display", true}, {"text", title}}}};
}
// Completes `c` (id, title, note and aria-label given) with one series per file system over
// the same x values, and the table of them.
chart per_fs_chart(chart c, const char* type, const std::string& x_title,
                   const std::vector<std::string>& x, const std::vector<std::string>& names,
                   const std::vector<series>& values) {
  json datasets = json::array();
  for (size_t i = 0; i < names.size(); ++i) {
    datasets.push_back({{"label", names[i]},
                        {"data", values[i]},
                        {"backgroundColor", colour(i)},
                        {"borderColor", colour(i)}});
  }
  std::vector<std::vector<std::string>> cells(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    cells[j].push_back(x[j]);
    for (const series& s : values) cells[j].push_back(fixed(s[j], 1));
  }
  std::vector<std::string> header{x_title};
  header.insert(header.end(), names.begin(), names.end());
  c.aria += "; the numbers are in the table below.";
  c.table = data_table(header, cells);
  c.config = {{"type", type}, {"data", {{"labels", x}, {"datasets", datasets}}}};
  c.config["options"]["scales"]["x"] = axis(x_title, "category");
  return c;
}

chart throughput_chart(const json& rows, const std::vector<std::string>& names) {
  json medians = json::array(), ranges = json::array(), colours = json::array();
  std::vector<std::vector<std::string>> cells;
  std::string aria =
      "Bar chart of the median MiB/s of each file system, with a line from min to max:";
  for (size_t i = 0; i < names.size(); ++i) {
    run_spread s = spread_of(rows[i], "mib_per_s");
    medians.push_back(s.median);
    ranges.push_back(std::isnan(s.min) || std::isnan(s.max) ? json() : json{s.min, s.max});
    colours.push_back(colour(i));
    cells.push_back({names[i], fixed(s.median, 1), fixed(s.min, 1), fixed(s.max, 1)});
    aria += fmt::format(" {} {} (min {}, max {}){}", names[i], cells[i][1], cells[i][2],
                        cells[i][3], i + 1 < names.size() ? ";" : ".");
  }
  // min–max is a thin floating bar drawn over each median's bar.
  json datasets = {
      {{"label", "median MiB/s"}, {"data", medians}, {"backgroundColor", colours}, {"order", 1}},
      {{"label", "min–max MiB/s"},
       {"data", ranges},
       {"backgroundColor", "#1d2330"},
       {"order", 0},
       {"grouped", false},
       {"barPercentage", 0.1}}};
  json config = {{"type", "bar"}, {"data", {{"labels", names}, {"datasets", datasets}}}};
  config["options"] = {{"indexAxis", "y"}, {"plugins", {{"legend", {{"display", false}}}}}};
  config["options"]["scales"]["x"] = axis("MiB/s");
  std::string table = data_table({"File system", "Median MiB/s", "Min MiB/s", "Max MiB/s"}, cells);
  return {"chart-throughput",
          "Throughput",
          "Median MiB/s over the runs; the dark line spans the slowest and the fastest run.",
          aria,
          table,
          config,
          std::max(200, 44 * int(names.size()) + 70)};
}

// The layout score of what each row's replay left; only when fresh and aged rows are compared
// (a fresh file system alone scores 1 and says little).
std::optional<chart> layout_chart(const json& rows, const std::vector<std::string>& names) {
  if (std::none_of(rows.begin(), rows.end(),
                   [](const json& row) { return at(row, "aged").is_object(); }))
    return std::nullopt;
  json scores = json::array(), colours = json::array();
  std::vector<std::vector<std::string>> cells;
  std::string aria = "Bar chart of the layout score of what the replay left on each file system:";
  for (size_t i = 0; i < names.size(); ++i) {
    const double score = number(at(at(rows[i], "layout"), "score"));
    scores.push_back(std::isnan(score) ? json() : json(score));
    colours.push_back(colour(i));
    cells.push_back({names[i], std::isnan(score) ? dash : fixed(score, 3)});
    aria += fmt::format(" {} {}{}", names[i], cells[i][1], i + 1 < names.size() ? ";" : ".");
  }
  json config = {{"type", "bar"},
                 {"data",
                  {{"labels", names},
                   {"datasets", {{{"label", "layout score"}, {"data", scores},
                                  {"backgroundColor", colours}}}}}}};
  config["options"] = {{"indexAxis", "y"}, {"plugins", {{"legend", {{"display", false}}}}}};
  config["options"]["scales"]["x"] = axis("layout score");
  config["options"]["scales"]["x"]["max"] = 1;
  return chart{"chart-layout",
               "Layout of what the replay wrote",
               "The share of its blocks that follow their predecessor on disk: 1 is contiguous.",
               aria,
               data_table({"File system", "Layout score"}, cells),
               config,
               std::max(200, 44 * int(names.size()) + 70)};
}

// p50 and p99 side by side, for the ops with the most calls.
std::vector<chart> latency_charts(const json& rows, const std::vector<std::string>& names) {
  std::map<std::string, double> calls;
  for (const json& row : rows) {
    for (const auto& [op, stats] : list_at(row, "ops").items()) {
      calls[op] += std::max(0.0, number(at(stats, "count")));  // max() also turns NaN into 0
    }
  }
  std::vector<std::pair<double, std::string>> ranked;  // most calls first, then by name
  for (const auto& [op, count] : calls) ranked.emplace_back(-count, op);
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> ops;
  for (size_t i = 0; i < std::min(ranked.size(), max_latency_ops); ++i) {
    ops.push_back(ranked[i].second);
  }
  if (ops.empty()) return {};
  std::vector<chart> charts;
  double low = INFINITY, high = 0;
  for (std::string percentile : {"p50", "p99"}) {
    std::vector<series> values(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      for (const std::string& op : ops) {
        double us = number(at(at(at(at(rows[i], "ops"), op), "latency_ns"), percentile)) / 1e3;
        values[i].push_back(us > 0 ? us : absent);  // a log axis has no 0
        if (us > 0) low = std::min(low, us), high = std::max(high, us);
      }
    }
    chart c = per_fs_chart(
        {"chart-latency-" + percentile, percentile + " latency per op",
         fmt::format("µs, log scale, for the {} ops with the most calls.", ops.size()),
         fmt::format("Grouped bar chart on a log scale of the {} latency in µs of {} on each "
                     "file system",
                     percentile, fmt::join(ops, ", "))},
        "bar", "op", ops, names, values);
    c.config["options"]["scales"]["y"] = axis(percentile + " µs (log scale)", "logarithmic");
    charts.push_back(std::move(c));
  }
  for (chart& c : charts) {  // both on the same whole decades, so that their bars compare
    if (high == 0) break;
    c.config["options"]["scales"]["y"]["min"] = std::pow(10, std::floor(std::log10(low)));
    c.config["options"]["scales"]["y"]["max"] = std::pow(10, std::ceil(std::log10(high)));
  }
  return charts;
}

// One series per file system from the points in its `list` (left out with fewer than
// `min_points`), over the union of their `x_key` values; an x missing in one leaves a gap.
using xs_and_series = std::pair<std::vector<double>, std::vector<series>>;
template <typename Value>  // double(size_t row_index, const json& point)
xs_and_series lines(const json& rows, const char* list, const char* x_key, size_t min_points,
                    Value value) {
  std::map<double, series> by_x;
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& points = list_at(rows[i], list);
    if (points.size() < min_points) continue;
    for (const json& point : points) {
      double x = number(at(point, x_key));
      if (std::isnan(x)) continue;
      series& slot = by_x[x];
      slot.resize(rows.size(), absent);
      slot[i] = value(i, point);
    }
  }
  xs_and_series out{{}, std::vector<series>(rows.size())};
  for (auto& [x, values] : by_x) {
    out.first.push_back(x);
    for (size_t i = 0; i < rows.size(); ++i) out.second[i].push_back(values[i]);
  }
  return out;
}

std::optional<chart> timeline_chart(const json& rows, const std::vector<std::string>& names) {
  std::vector<double> width_s;  // a bucket's width: the gap between the first two, else 100 ms
  for (const json& row : rows) {
    const json& buckets = list_at(row, "timeline");
    double gap =
        buckets.size() < 2 ? 0 : number(at(buckets[1], "t_ms")) - number(at(buckets[0], "t_ms"));
    width_s.push_back((gap > 0 ? gap : 100) / 1e3);
  }
  auto [times, rates] = lines(rows, "timeline", "t_ms", 1, [&](size_t i, const json& point) {
    return number(at(point, "bytes")) / mib / width_s[i];
  });
  if (times.empty()) return std::nullopt;
  std::vector<std::string> labels;
  for (double t : times) labels.push_back(fixed(t / 1e3, 1));
  chart c = per_fs_chart({"chart-timeline", "Throughput over time", "MiB/s in each time bucket.",
                          "Line chart of the MiB/s over time of each file system"},
                         "line", "time (s)", labels, names, rates);
  c.config["options"]["scales"]["x"]["ticks"]["maxRotation"] = 0;
  c.config["options"]["scales"]["y"] = axis("MiB/s");
  c.config["options"]["elements"]["point"]["radius"] = 0;
  c.config["options"]["spanGaps"] = true;
  return c;
}

// Only for --repeat: a line needs two copies at least.
std::optional<chart> copies_chart(const json& rows, const std::vector<std::string>& names) {
  auto [copies, space] = lines(rows, "copies", "copy", 2, [](size_t, const json& point) {
    return number(at(point, "space_used_bytes")) / mib;
  });
  if (copies.size() < 2) return std::nullopt;
  std::vector<std::string> labels;
  for (double copy : copies) labels.push_back(grouped(copy));
  chart c = per_fs_chart({"chart-copies", "Space per copy", "MiB used by each copy of --repeat.",
                          "Line chart of the MiB used by each copy on each file system"},
                         "line", "copy", labels, names, space);
  c.config["options"]["scales"]["y"] = axis("MiB used");
  c.config["options"]["scales"]["y"]["beginAtZero"] = true;
  return c;
}

constexpr std::string_view style = R"(
*{box-sizing:border-box} main{padding:16px 28px 28px} .num{text-align:right}
body{margin:0;background:#eef1f5;color:#1d2330;
  font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header{background:#1f2a3c;color:#cfd8e6;padding:14px 28px} header p{margin:3px 0}
header h1{margin:0 0 6px;font-size:21px;font-weight:600;color:#fff}
header code{background:#2e3c54;color:#fff;padding:1px 6px;border-radius:3px}
.settings{list-style:none;display:flex;gap:20px;margin:4px 0;padding:0} .settings b{color:#fff}
section,figure{background:#fff;border:1px solid #d9dee7;border-radius:6px;padding:12px 16px;
  margin:0 0 16px;overflow-x:auto}
h2,h3{margin:0 0 8px;font-size:15px}
.setup{display:grid;grid-template-columns:minmax(260px,1fr) 3.5fr;gap:28px}
.setup>div{min-width:0;overflow-x:auto} #filesystems code{white-space:normal;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid #e4e8ee;text-align:left;vertical-align:top}
th{background:#f5f7fa;color:#4a5466;font-weight:600;font-size:12.5px}
td.num,td:first-child,code{white-space:nowrap} #results td:first-child{font-weight:600}
small{display:block;color:#6b7385;font-size:11.5px;font-weight:normal;white-space:nowrap}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:7px}
tr.slower td{background:#fdeceb} .bad{color:#b3261e;font-weight:600}
.flag{background:#b3261e;color:#fff;border-radius:3px;padding:0 5px;font-size:11px;font-weight:600}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:0 16px;align-items:start}
figure p{margin:0 0 8px;color:#5b6475;font-size:12.5px}
.plot{position:relative;min-width:0}
summary{cursor:pointer;color:#2a5db0;font-size:12.5px;margin-top:8px}
details table{margin-top:6px;font-size:12.5px}
)";

// Everything a chart needs is in its JSON configuration, so the script only creates them.
constexpr std::string_view page_script = R"(
(function () {
  if (!window.Chart) return;
  Object.assign(Chart.defaults, { animation: false, maintainAspectRatio: false });
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  for (const { id, config } of JSON.parse(document.getElementById('fsrr-charts').textContent)) {
    new Chart(document.getElementById(id), config);
  }
})();
)";

const char* const finding_kinds[] = {"lost_durable", "unmountable", "fsck_errors",
                                     "rename_not_atomic"};
// One colour per kind of finding (not per file system: the bars are file systems).
constexpr std::string_view kind_colours[] = {"#c0392b", "#8e5cc4", "#e07b24", "#3366cc"};

void write_crash_heading(std::string& out, const json& crash) {
  put(out,
      "<header>\n<h1>fsrr crashtest</h1>\n<p>Trace <code>{}</code></p>\n<ul class=\"settings\">",
      text_or_dash(at(crash, "trace")));
  for (const char* key : {"points", "reorder", "seed"}) {
    const json& value = at(crash, key);
    put(out, "<li>{} <b>{}</b></li>", key,
        value.is_number() ? grouped(number(value)) : text_or_dash(value));
  }
  out += "</ul>\n</header>\n";
}

void write_crash_results(std::string& out, const json& rows) {
  out += "<section>\n<h2>Results</h2>\n<table id=\"results\">\n<thead><tr><th>File system</th>";
  for (const char* title : {"Crash points", "States<small>of them reordered</small>", "States/s",
                            "lost_durable", "unmountable", "fsck_errors", "rename_not_atomic",
                            "Replay mismatches", "Wall time"})
    put(out, "<th class=\"num\">{}</th>", title);
  out += "<th>First state with a finding</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    put(out, "<tr><td>{}{}</td>", swatch(i), escape(fs_name(row, i)));
    if (const std::string error = text(at(row, "error")); !error.empty()) {
      put(out, "<td colspan=\"10\" class=\"bad\">could not run: {}</td></tr>\n", escape(error));
      continue;
    }
    put(out, "<td class=\"num\">{}</td><td class=\"num\">{}<small>{}</small></td>"
             "<td class=\"num\">{}</td>",
        grouped(number(at(row, "crash_points"))), grouped(number(at(row, "states"))),
        grouped(number(at(row, "reordered_states"))), fixed(number(at(row, "states_per_s")), 1));
    for (const char* kind : finding_kinds) {
      const double n = number(at(at(at(row, "findings"), kind), "count"));
      put(out, "<td class=\"num{}\">{}</td>", n > 0 ? " bad" : "", grouped(n));
    }
    put(out, "<td class=\"num\">{}</td><td class=\"num\">{}</td><td><code>{}</code></td></tr>\n",
        grouped(number(at(row, "replay_mismatches"))), duration(number(at(row, "wall_ns"))),
        text_or_dash(at(row, "first_state")));
  }
  if (rows.empty()) out += "<tr><td colspan=\"11\">This crashtest has no file systems.</td></tr>\n";
  out += "</tbody>\n</table>\n</section>\n";
}

chart findings_chart(const json& rows, const std::vector<std::string>& names) {
  json datasets = json::array();
  std::vector<std::vector<std::string>> cells(names.size());
  for (size_t i = 0; i < names.size(); ++i) cells[i].push_back(names[i]);
  std::string aria = "Stacked bar chart of the findings of each kind on each file system:";
  for (size_t k = 0; k < std::size(finding_kinds); ++k) {
    json data = json::array();
    for (size_t i = 0; i < names.size(); ++i) {
      const double n = number(at(at(at(rows[i], "findings"), finding_kinds[k]), "count"));
      data.push_back(std::isnan(n) ? 0.0 : n);
      cells[i].push_back(grouped(n));
    }
    datasets.push_back({{"label", finding_kinds[k]},
                        {"data", data},
                        {"backgroundColor", std::string(kind_colours[k])}});
  }
  for (size_t i = 0; i < names.size(); ++i)
    aria += fmt::format(" {}: {} lost_durable, {} unmountable, {} fsck_errors, {} "
                        "rename_not_atomic{}",
                        names[i], cells[i][1], cells[i][2], cells[i][3], cells[i][4],
                        i + 1 < names.size() ? ";" : ".");
  json config = {{"type", "bar"}, {"data", {{"labels", names}, {"datasets", datasets}}}};
  config["options"] = {{"indexAxis", "y"}};
  config["options"]["scales"]["x"] = axis("findings");
  config["options"]["scales"]["x"]["stacked"] = true;
  config["options"]["scales"]["x"]["beginAtZero"] = true;
  config["options"]["scales"]["y"] = {{"stacked", true}};
  std::vector<std::string> header{"File system"};
  header.insert(header.end(), std::begin(finding_kinds), std::end(finding_kinds));
  return {"chart-findings",
          "Findings",
          "Each kind counted once per file (lost_durable, rename_not_atomic) or per state.",
          aria,
          data_table(header, cells),
          config,
          std::max(160, 44 * int(names.size()) + 90)};
}

void write_first_findings(std::string& out, const json& rows,
                          const std::vector<std::string>& names) {
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::vector<std::string>> cells;
    for (const char* kind : finding_kinds)
      for (const json& f : list_at(at(at(rows[i], "findings"), kind), "first")) {
        const double reorder = number(at(f, "reorder"));
        cells.push_back({kind, grouped(number(at(f, "seq"))), text(at(f, "op")), text(at(f, "path")),
                         text(at(f, "promised_by")), text(at(f, "expected")), text(at(f, "found")),
                         reorder > 0 ? grouped(reorder) : ""});
      }
    if (cells.empty()) continue;
    put(out, "<section>\n<h2>{}{}: the first findings</h2>\n", swatch(i), escape(names[i]));
    out += "<table class=\"findings\">\n<thead><tr>";
    for (const char* title : {"Finding", "After op", "Op", "File", "Promised by", "Expected",
                              "Found", "Reordered subset"})
      put(out, "<th>{}</th>", title);
    out += "</tr></thead>\n<tbody>\n";
    for (const auto& row : cells) {
      out += "<tr>";
      for (size_t c = 0; c < row.size(); ++c) {
        if (c == 3)
          put(out, "<td><code>{}</code></td>", escape(row[c]));
        else
          put(out, "<td>{}</td>", escape(row[c]));
      }
      out += "</tr>\n";
    }
    out += "</tbody>\n</table>\n</section>\n";
  }
}

// A chart as a figure: its canvas (configured from `canvases` by page_script) and its numbers.
void write_figure(std::string& out, const chart& c, json& canvases) {
  put(out,
      "<figure>\n<h3>{}</h3>\n<p>{}</p>\n<div class=\"plot\" style=\"height:{}px\">"
      "<canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>\n"
      "<details><summary>The numbers</summary>\n{}</details>\n</figure>\n",
      escape(c.title), escape(c.note), c.height, c.id, escape(c.aria), c.table);
  canvases.push_back({{"id", c.id}, {"config", c.config}});
}

// </main>, the inlined library, the charts' configurations and the script that draws them.
void write_page_end(std::string& out, const std::string& chart_js, const json& canvases) {
  out += "</main>\n<script>\n" + inline_script(chart_js) + "\n</script>\n" +
         "<script type=\"application/json\" id=\"fsrr-charts\">" + script_json(canvases) +
         "</script>\n<script>" + std::string(page_script) + "</script>\n</body>\n</html>\n";
}

}  // namespace

result<std::string> chart_js_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream source;
  source << in.rdbuf();
  if (!in || source.str().empty())
    return failure("cannot read Chart.js from {}: install Debian's libjs-chart.js package", path);
  return source.str();
}

std::string compare_html(const nlohmann::json& compare, const std::string& chart_js) {
  const json& rows = list_at(compare, "fs");
  std::vector<std::string> names;
  for (size_t i = 0; i < rows.size(); ++i) names.push_back(fs_name(rows[i], i));
  std::string command = shell_words(compare);
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>fsrr compare{}</title>\n<style>{}</style>\n</head>\n<body>\n",
      command.empty() ? "" : ": " + escape(command), style);
  write_heading(out, compare);
  out += "<main>\n";
  write_setup(out, compare, rows);
  write_results(out, rows);
  write_layout(out, rows);

  std::vector<chart> charts;
  if (!rows.empty()) charts.push_back(throughput_chart(rows, names));
  if (auto layout = layout_chart(rows, names)) charts.push_back(*layout);
  if (auto timeline = timeline_chart(rows, names)) charts.push_back(*timeline);
  for (chart& latency : latency_charts(rows, names)) charts.push_back(std::move(latency));
  if (auto copies = copies_chart(rows, names)) charts.push_back(*copies);
  json canvases = json::array();
  out += "<div class=\"charts\">\n";
  for (const chart& c : charts) {
    write_figure(out, c, canvases);
  }
  out += "</div>\n";
  write_page_end(out, chart_js, canvases);
  return out;
}

}  // namespace fsrr::lab

namespace fsrr::lab {

std::string crashtest_html(const nlohmann::json& crash, const std::string& chart_js) {
  const json& rows = list_at(crash, "fs");
  std::vector<std::string> names;
  for (size_t i = 0; i < rows.size(); ++i) names.push_back(fs_name(rows[i], i));
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>fsrr crashtest: {}</title>\n<style>{}</style>\n</head>\n<body>\n",
      escape(text(at(crash, "trace"))), style);
  write_crash_heading(out, crash);
  out += "<main>\n";
  write_setup(out, crash, rows);
  write_crash_results(out, rows);
  json canvases = json::array();
  if (!rows.empty()) {
    const chart c = findings_chart(rows, names);
    write_figure(out, c, canvases);
  }
  write_first_findings(out, rows, names);
  write_page_end(out, chart_js, canvases);
  return out;
}

}  // namespace fsrr::lab
