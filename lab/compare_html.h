// Renders the result of `fsrr compare` (compare.json) as one self-contained HTML page: tables
// of the system, the file systems and their results, and Chart.js charts, modelled on the
// Phoronix Test Suite result viewer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "result.h"

namespace fsrr::lab {

// The Chart.js source (Debian's libjs-chart.js), read at generation time; an error naming the
// package if the file is missing or empty.
result<std::string> chart_js_source(
    const std::string& path = "/usr/share/javascript/chart.js/chart.min.js");

// A self-contained, offline HTML page for a compare result: `chart_js` is inlined and nothing is
// fetched when the page is viewed. Keys missing from `compare` (files from older versions) show
// as "–" or leave their part out. Every number drawn on a canvas is also in the page as text.
std::string compare_html(const nlohmann::json& compare, const std::string& chart_js);

// The same for a crashtest result (crashtest.json): the system and file systems, a table of
// crash points, states and findings per file system, a chart of the findings by kind, and
// each file system's first findings.
std::string crashtest_html(const nlohmann::json& crashtest, const std::string& chart_js);

}  // namespace fsrr::lab
