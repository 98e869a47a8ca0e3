// report.html of `petra report`: one self-contained page (plots embedded as base64 PNG, inline
// CSS, no script, nothing fetched) with the runs' summary, per-stage tables and configs.
#pragma once

#include <string>
#include <vector>

#include "app/report_data.hpp"
#include "app/report_plots.hpp"

namespace petra::app {

/// `bytes` in base64 (RFC 4648, with padding).
std::string base64(const std::string& bytes);

/// `text` with &, <, >, " and ' escaped for HTML text and attribute values.
std::string html_escape(const std::string& text);

/// Writes `<dir>/report.html` atomically; every drawn plot is read from `<dir>/<name>.png` and
/// embedded, every missing one is listed with why.
void write_report_html(const std::string& dir, const std::vector<run_data>& runs,
                       const std::vector<report_plot>& plots);

}  // namespace petra::app
