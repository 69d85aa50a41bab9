#include "compare_html.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef SAMPLE_COMPARE
#error "define SAMPLE_COMPARE as the path of tests/lab/sample_compare.json"
#endif

namespace fsrr::lab {
namespace {

using nlohmann::json;

const std::string chart_stub = "/* Chart.js stands here */";

json sample() {
  return json::parse(std::ifstream(SAMPLE_COMPARE));
}

// The text from the first `start` (included) to the `end` after it (excluded).
std::string between(const std::string& page, const std::string& start, const std::string& end) {
  size_t from = page.find(start);
  REQUIRE(from != std::string::npos);
  size_t to = page.find(end, from);
  REQUIRE(to != std::string::npos);
  return page.substr(from, to - from);
}

size_t count(const std::string& page, const std::regex& pattern) {
  return size_t(std::distance(std::sregex_iterator(page.begin(), page.end(), pattern),
                              std::sregex_iterator()));
}

// The Chart.js configurations the page script turns into charts, by canvas id.
json charts_in(const std::string& page) {
  std::string start = "<script type=\"application/json\" id=\"fsrr-charts\">";
  json by_id;
  for (const json& chart : json::parse(between(page, start, "</script>").substr(start.size()))) {
    by_id[chart["id"].get<std::string>()] = chart["config"];
  }
  return by_id;
}

TEST_CASE("the settings say when the replay's threads ran SCHED_FIFO (compare --realtime)") {
  json compare = sample();
  const std::string plain =
      between(compare_html(compare, chart_stub), "<ul class=\"settings\">", "</ul>");
  CHECK_THAT(plain, Catch::Contains("<li>timing <b>afap</b></li>"));
  compare["timing"] = "faithful";
  compare["realtime"] = true;
  const std::string fifo =
      between(compare_html(compare, chart_stub), "<ul class=\"settings\">", "</ul>");
  CHECK_THAT(fifo, Catch::Contains("<li>timing <b>faithful, SCHED_FIFO</b></li>"));
}

TEST_CASE("every file system appears in the results table with its median MiB/s") {
  json compare = sample();
  REQUIRE(compare["fs"].size() == 5);
  std::string results =
      between(compare_html(compare, chart_stub), "<table id=\"results\"", "</table>");
  for (const json& fs : compare["fs"]) {
    std::string row = between(results, fs["name"].get<std::string>() + "</td>", "</tr>");
    CHECK_THAT(row, Catch::Contains(fmt::format("<td class=\"num\">{:.1f}<small>",
                                                fs["mib_per_s"]["median"].get<double>())));
  }
}

TEST_CASE("a timed compare's results show each file system's lateness and its ops' part") {
  json compare = sample();
  const std::string afap =
      between(compare_html(compare, chart_stub), "<table id=\"results\"", "</table>");
  CHECK_THAT(afap, !Catch::Contains("Lateness"));
  compare["fs"][0]["lateness_ns"] = {{"p50", 2000}, {"p99", 12'340'000}, {"max", 20'000'000}};
  compare["fs"][0]["op_bound_lateness_ns"] = {{"p50", 0}, {"p99", 11'800'000}, {"max", 1}};
  const std::string results =
      between(compare_html(compare, chart_stub), "<table id=\"results\"", "</table>");
  CHECK_THAT(results, Catch::Contains("<th class=\"num\">Lateness<small>p99</small></th>"));
  const std::string first =
      between(results, compare["fs"][0]["name"].get<std::string>() + "</td>", "</tr>");
  CHECK_THAT(first, Catch::Contains("<td class=\"num\">12.3 ms</td><td class=\"num\">11.8 ms</td>"));
  // a row without them (a run that stopped before its first op) shows dashes
  const std::string second =
      between(results, compare["fs"][1]["name"].get<std::string>() + "</td>", "</tr>");
  const std::string dashes = "<td class=\"num\">–</td><td class=\"num\">–</td>";
  REQUIRE(second.size() > dashes.size());
  CHECK(second.substr(second.size() - dashes.size()) == dashes);
}

TEST_CASE("the chart library is inlined and nothing is fetched from the network") {
  const result<std::string> source = chart_js_source();
  REQUIRE(source.has_value());
  const std::string& chart_js = *source;
  CHECK_THAT(chart_js, Catch::Contains("Chart.js v3"));
  std::string page = compare_html(sample(), chart_js);
  CHECK_THAT(page, Catch::Contains(chart_js.substr(0, 4000)));
  CHECK(count(page, std::regex(R"((src|href|action)\s*=\s*["']?\s*(https?:)?//)",
                               std::regex::icase)) == 0);
  CHECK(count(page, std::regex(R"(<script[^>]*\bsrc\s*=|<link\b|<iframe\b|<img\b)",
                               std::regex::icase)) == 0);
  CHECK_THAT(between(page, "<style>", "</style>"),
             !Catch::Contains("url(") && !Catch::Contains("@import"));
}

TEST_CASE("a </script> inside a file-system name cannot end the script") {
  json compare = sample();
  std::string evil = "evil</script><script>alert(1)</script><!--";
  compare["fs"][0]["name"] = evil;
  std::string page = compare_html(compare, chart_stub);

  // Three scripts (the library, the chart data, the page script) and three ends, nothing more.
  CHECK(count(page, std::regex("<script", std::regex::icase)) == 3);
  CHECK(count(page, std::regex("</script", std::regex::icase)) == 3);
  CHECK_THAT(between(page, "<table id=\"results\"", "</table>"),
             Catch::Contains("evil&lt;/script&gt;&lt;script&gt;alert(1)"));
  // The chart data still holds the name as it is.
  CHECK(charts_in(page)["chart-timeline"]["data"]["datasets"][0]["label"] == evil);
}

TEST_CASE("a </script> inside the chart library cannot end its element") {
  std::string page = compare_html(sample(), "var s = '</SCRIPT><b>';");
  CHECK(count(page, std::regex("</script", std::regex::icase)) == 3);
  CHECK_THAT(page, Catch::Contains("var s = '<\\/SCRIPT><b>';"));
}

TEST_CASE("a compare without repeat has no space-per-copy chart") {
  json compare = sample();
  CHECK_THAT(compare_html(compare, chart_stub), Catch::Contains("id=\"chart-copies\""));

  compare["repeat"] = 1;
  for (json& fs : compare["fs"]) fs.erase("copies");
  std::string page = compare_html(compare, chart_stub);
  CHECK_THAT(page, !Catch::Contains("chart-copies") && !Catch::Contains("Space per copy"));

  // One copy each, as a run without --repeat may record, is not a line either.
  for (json& fs : compare["fs"]) fs["copies"] = {{{"copy", 1}, {"space_used_bytes", 1 << 20}}};
  CHECK_THAT(compare_html(compare, chart_stub), !Catch::Contains("chart-copies"));
}

TEST_CASE("a row with a baseline shows its change and is flagged slower") {
  json compare = sample();
  std::string results =
      between(compare_html(compare, chart_stub), "<table id=\"results\"", "</table>");
  CHECK_THAT(results, Catch::Contains("MiB/s vs baseline"));
  CHECK_THAT(between(results, "<tr class=\"slower\">", "</tr>"),
             Catch::Contains(">xfs</td>") && Catch::Contains("-8.4 % <span class=\"flag\">slower"));
  CHECK(count(results, std::regex("class=\"flag\"")) == 1);

  for (json& fs : compare["fs"]) fs.erase("baseline");
  CHECK_THAT(compare_html(compare, chart_stub),
             !Catch::Contains("vs baseline") && !Catch::Contains("class=\"slower\""));
}

TEST_CASE("fresh and aged rows: the age and layout table and the layout chart, with their numbers") {
  json compare = sample();
  CHECK_THAT(compare_html(compare, chart_stub),
             !Catch::Contains("Age and layout") && !Catch::Contains("chart-layout"));
  json& fresh = compare["fs"][0];
  json aged = fresh;
  aged["name"] = "ext4 (fill=50,churn=1)";
  fresh["age"] = "none";
  fresh["layout"] = {{"score", 1.0}, {"extents_per_file", 1.0}, {"extents_per_mib", 2.99}};
  fresh["free_space_fragments"] = 46;
  aged["age"] = "fill=50,churn=1";
  aged["aged"] = {{"files", 47360}, {"fill", 0.498}, {"free_space_fragments", 23279}};
  aged["layout"] = {{"score", 0.9234}, {"extents_per_file", 7.59}, {"extents_per_mib", 22.69}};
  aged["free_space_fragments"] = 10457;
  compare["fs"].push_back(aged);
  const std::string page = compare_html(compare, chart_stub);
  const std::string table = between(page, "<table id=\"layout\"", "</table>");
  CHECK_THAT(table, Catch::Contains("<td>fresh</td>") &&
                        Catch::Contains("<code>fill=50,churn=1</code>") &&
                        Catch::Contains(">47,360<") && Catch::Contains(">49.8 %<") &&
                        Catch::Contains(">23,279<") && Catch::Contains(">0.923<") &&
                        Catch::Contains(">7.59<") && Catch::Contains(">10,457<") &&
                        Catch::Contains(">46<"));
  CHECK_THAT(between(page, "id=\"chart-layout\"", "</figure>"),
             Catch::Contains("ext4 (fill=50,churn=1) 0.923"));
}

TEST_CASE("a compare from an older fsrr, with little more than names, still renders") {
  json compare = {{"fs", {{{"name", "ext4"}}, {{"kind", "xfs"}, {"mib_per_s", 12.5}}}}};
  std::string page;
  REQUIRE_NOTHROW(page = compare_html(compare, chart_stub));
  std::string results = between(page, "<table id=\"results\"", "</table>");
  CHECK_THAT(results, Catch::Contains(">ext4</td>") && Catch::Contains(">xfs</td>") &&
                          Catch::Contains("12.5"));
  CHECK_THAT(page, !Catch::Contains("chart-timeline") && !Catch::Contains("chart-latency"));
  CHECK_NOTHROW(compare_html(json::object(), chart_stub));
  CHECK_NOTHROW(compare_html(json::array(), chart_stub));
}

TEST_CASE("the latency charts show at most eight ops, those with the most calls") {
  json charts = charts_in(compare_html(sample(), chart_stub));
  // Calls in the sample: newfstatat, then close and openat (a tie, by name), write, utimensat,
  // read, fchmodat and rename (a tie); lsetxattr, getdents64, mkdir and unlink have fewer.
  std::vector<std::string> expected{"newfstatat", "close", "openat",   "write",
                                    "utimensat",  "read",  "fchmodat", "rename"};
  for (const char* id : {"chart-latency-p50", "chart-latency-p99"}) {
    INFO(id);
    CHECK(charts[id]["data"]["labels"].get<std::vector<std::string>>() == expected);
    CHECK(charts[id]["options"]["scales"]["y"]["type"] == "logarithmic");
    CHECK(charts[id]["data"]["datasets"].size() == 5);
  }
  // tmpfs's openat p50 in the sample is 2335 ns: the p50 table shows 2.3 µs.
  CHECK(charts["chart-latency-p50"]["data"]["datasets"][0]["data"][2] == Approx(2.335));
}

TEST_CASE("throughput over time is in MiB/s per bucket") {
  json compare = {
      {"fs",
       {{{"name", "tmpfs"},
         {"timeline", {{{"t_ms", 0}, {"bytes", 1 << 20}}, {{"t_ms", 100}, {"bytes", 3 << 20}}}}}}}};
  std::string page = compare_html(compare, chart_stub);
  json points = charts_in(page)["chart-timeline"]["data"]["datasets"][0]["data"];
  CHECK(points == json{10.0, 30.0});
  std::string table = between(page, "<canvas id=\"chart-timeline\"", "</details>");
  CHECK_THAT(table, Catch::Contains("<td class=\"num\">10.0</td>") &&
                        Catch::Contains("<td class=\"num\">30.0</td>"));
}

TEST_CASE("every chart has an aria-label and a table with its numbers") {
  std::string page = compare_html(sample(), chart_stub);
  std::regex canvas("<canvas id=\"([a-z0-9-]+)\" role=\"img\" aria-label=\"([^\"]+)\">");
  std::vector<std::string> ids;
  for (auto m = std::sregex_iterator(page.begin(), page.end(), canvas); m != std::sregex_iterator();
       ++m) {
    ids.push_back((*m)[1]);
    CHECK((*m)[2].length() > 40);
    CHECK_THAT(between(page, "<canvas id=\"" + ids.back() + "\"", "</details>"),
               Catch::Contains("<table>"));
  }
  CHECK(ids == std::vector<std::string>{"chart-throughput", "chart-timeline", "chart-latency-p50",
                                        "chart-latency-p99", "chart-copies"});
  CHECK(count(page, std::regex("<canvas")) == ids.size());
  // The throughput chart's label reads out every median, min and max.
  CHECK_THAT(page, Catch::Contains("tmpfs 250.0 (min 239.0, max 259.8)"));
}

TEST_CASE("chart_js_source names the Debian package when the file is missing") {
  const result<std::string> missing = chart_js_source("/nonexistent/chart.min.js");
  REQUIRE(!missing.has_value());
  CHECK(missing.error().message ==
        "cannot read Chart.js from /nonexistent/chart.min.js: install Debian's libjs-chart.js "
        "package");
}

}  // namespace
}  // namespace fsrr::lab

namespace fsrr::lab {
namespace {

json crash_sample() {
  return json::parse(R"({
    "trace": "w.trace", "points": "every:5", "reorder": 2, "seed": 7,
    "system": {"kernel": "Linux 6.18", "cpus": 2},
    "fs": [
      {"name": "ext4", "kind": "ext4", "mkfs": "", "mount": "", "crash_points": 224,
       "states": 54, "reordered_states": 3, "states_per_s": 20.04, "replay_mismatches": 0,
       "wall_ns": 6730000000, "first_state": "",
       "findings": {"lost_durable": {"count": 0, "first": []},
                    "unmountable": {"count": 0, "first": []},
                    "fsck_errors": {"count": 0, "first": []},
                    "rename_not_atomic": {"count": 0, "first": []}}},
      {"name": "ext4:mount=barrier=0", "kind": "ext4", "mkfs": "", "mount": "barrier=0",
       "crash_points": 51, "states": 1, "reordered_states": 0, "states_per_s": 6.0,
       "replay_mismatches": 0, "wall_ns": 1100000000, "first_state": "o/ext4.img",
       "findings": {"lost_durable": {"count": 81, "first": [
                      {"seq": 945, "op": "fsync", "path": "/w/<script>f4", "promised_by": "fsync #945",
                       "expected": "4000 bytes", "found": "missing", "reorder": 2}]},
                    "unmountable": {"count": 0, "first": []},
                    "fsck_errors": {"count": 1, "first": []},
                    "rename_not_atomic": {"count": 0, "first": []}}},
      {"name": "xfs", "error": "mkfs.xfs failed: too small"}
    ]})");
}

}  // namespace

TEST_CASE("the crashtest page: each file system's counts, the settings, the first findings, escaped") {
  const std::string page = crashtest_html(crash_sample(), chart_stub);
  const std::string results = between(page, "<table id=\"results\">", "</table>");
  CHECK(results.find("ext4:mount=barrier=0") != std::string::npos);
  CHECK(results.find("<td class=\"num bad\">81</td>") != std::string::npos);
  CHECK(results.find("<td class=\"num bad\">1</td>") != std::string::npos);  // fsck_errors
  CHECK(results.find("54<small>3</small>") != std::string::npos);
  CHECK(results.find("could not run: mkfs.xfs failed: too small") != std::string::npos);
  const std::string settings = between(page, "<ul class=\"settings\">", "</ul>");
  CHECK(settings.find("points <b>every:5</b>") != std::string::npos);
  CHECK(settings.find("reorder <b>2</b>") != std::string::npos);
  // the finding, its reordered subset, and a name that is markup shown as text
  const std::string findings = between(page, "the first findings</h2>", "</section>");
  CHECK(findings.find("<code>/w/&lt;script&gt;f4</code>") != std::string::npos);
  CHECK(findings.find("<td>fsync #945</td>") != std::string::npos);
  CHECK(findings.find("<td>2</td></tr>") != std::string::npos);
  CHECK(page.find("<script>f4") == std::string::npos);
  // one chart, its numbers as text too
  CHECK(count(page, std::regex("<canvas ")) == 1);
  CHECK(between(page, "<details>", "</details>").find("<td class=\"num\">81</td>") !=
        std::string::npos);
  CHECK(page.find(chart_stub) != std::string::npos);
}

}  // namespace fsrr::lab
