// report.html: summary, plots (embedded), per-stage tables and each run's config, in one file that
// a browser opens from disk with no network.
#include "app/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compute/serialize/atomic_file.hpp"

namespace petra::app {
namespace {
namespace fs = std::filesystem;

std::string fixed(double v, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

std::string percent(const std::optional<double>& v) { return v ? fixed(100 * *v, 2) + " %" : "—"; }

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

const char* style = R"(body{font-family:sans-serif;margin:24px auto;max-width:1080px;color:#222}
h1{margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td{white-space:nowrap}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left;white-space:nowrap}
.swatch{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:middle}
figure{margin:8px 0}img{max-width:100%;border:1px solid #ddd}figcaption{color:#555;font-size:90%}
.missing{color:#a15c00}pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:85%}
)";

std::string swatch(size_t r) {
  return "<span class=\"swatch\" style=\"background:" + run_colour(r) + "\"></span>";
}

/// The final test accuracy: the summary's, else the last epoch's.
std::optional<double> final_accuracy(const run_data& run) {
  if (run.summary && run.summary->test_accuracy) return run.summary->test_accuracy;
  return run.epochs.back().test_accuracy;
}

std::string micro_batches(const run_data& run) {
  if (!run.summary || !run.summary->micro_batches) return "—";
  const accounting& a = *run.summary->micro_batches;
  auto count = [](int64_t n) { return std::to_string(n); };
  // A resumed run's counts are its last process's: what earlier ones completed is said beside them.
  const std::string before =
      a.completed_before_resume > 0 ? " (+" + count(a.completed_before_resume) + " before the resume)" : "";
  return count(a.completed) + before + " / " + count(a.replayed) + " / " + count(a.restarts);
}

void summary_table(std::ostream& out, const std::vector<run_data>& runs) {
  out << "<table><tr><th>run</th><th>method</th><th>runtime</th><th>J</th><th>k</th><th>epochs</th>"
         "<th>final test accuracy</th><th>wall time</th><th>training images/s</th>"
         "<th>micro-batches completed / replayed / restarts</th><th>failures</th></tr>\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const run_data& run = runs[r];
    const bool done = run.summary.has_value() && !run.summary->failed();
    const std::string wall =
        done && run.summary->wall_seconds ? fixed(*run.summary->wall_seconds, 1) + " s" : "—";
    const auto images = done ? run.summary->images_per_s : run.epochs.back().images_per_s;
    out << "<tr><td>" << swatch(r) << html_escape(run.name) << "</td><td>"
        << html_escape(config::to_string(run.method)) << "</td><td>"
        << html_escape(config::to_string(run.runtime)) << "</td><td>" << run.stage_count << "</td><td>"
        << run.accumulation << "</td><td>" << run.epochs.size() << "</td><td>" << percent(final_accuracy(run))
        << (done ? "" : " (last epoch)") << "</td><td>" << wall << "</td><td>"
        << (images ? fixed(*images, 0) : "—") << "</td><td>" << micro_batches(run) << "</td><td>"
        << run.failures.size() << "</td></tr>\n";
  }
  out << "</table>\n";
  for (const auto& run : runs) {
    if (!run.summary)
      out << "<p class=\"missing\">" << html_escape(run.name)
          << ": no summary line: the run did not finish; its last epoch is shown.</p>\n";
    else if (run.summary->failed())
      out << "<p class=\"missing\">" << html_escape(run.name) << ": the run failed ("
          << html_escape(run.summary->what.value_or("no reason given"))
          << "); its last epoch is shown.</p>\n";
    for (const auto& what : run.failures)
      out << "<p class=\"missing\">" << html_escape(run.name) << ": failure: " << html_escape(what)
          << "</p>\n";
  }
}

/// One run's per-stage measurements, over all its epochs.
void stage_table(std::ostream& out, const run_data& run, size_t r) {
  out << "<h3>" << swatch(r) << html_escape(run.name) << "</h3>\n<table><tr><th>stage</th>"
      << "<th>expected staleness 2(J−j)/k</th><th>measured mean staleness</th><th>busy</th><th>FIFO peak</th>"
      << "<th>mailbox peak</th><th>inversion error (last epoch)</th>"
      << "<th>fallback: forwards keeping inputs / all, switches</th></tr>\n";
  for (int stage = 1; stage <= run.stage_count; ++stage) {
    double weighted = 0, total = 0, busy = 0, busy_weight = 0;
    std::optional<int64_t> fifo, mailbox;
    std::optional<double> inversion;
    std::optional<int64_t> kept, switches;  // only where the fallback could act
    int64_t forwards = 0;
    for (const auto& e : run.epochs)
      for (const auto& s : e.stages) {
        if (s.stage != stage) continue;
        for (const auto& [value, count] : s.staleness_steps)
          weighted += double(value) * count, total += count;
        if (s.busy_fraction)
          busy += *s.busy_fraction * e.epoch_seconds.value_or(1), busy_weight += e.epoch_seconds.value_or(1);
        if (s.fifo_peak) fifo = std::max(fifo.value_or(0), *s.fifo_peak);
        if (s.mailbox_peak) mailbox = std::max(mailbox.value_or(0), *s.mailbox_peak);
        if (s.inversion_error_mean) inversion = s.inversion_error_mean;
        forwards += s.forwards;
        if (s.fallback_forwards) kept = kept.value_or(0) + *s.fallback_forwards;
        if (s.fallback_switches) switches = switches.value_or(0) + *s.fallback_switches;
      }
    char inv[32] = "—";
    if (inversion) std::snprintf(inv, sizeof inv, "%.3g", *inversion);
    out << "<tr><td>" << stage << "</td><td>" << fixed(run.expected_staleness(stage), 2) << "</td><td>"
        << (total > 0 ? fixed(weighted / total, 2) : "—") << "</td><td>"
        << (busy > 0 ? fixed(100 * busy / busy_weight, 1) + " %" : "—") << "</td><td>"
        << (fifo ? std::to_string(*fifo) : "—") << "</td><td>" << (mailbox ? std::to_string(*mailbox) : "—")
        << "</td><td>" << inv << "</td><td>"
        << (kept ? std::to_string(*kept) + " / " + std::to_string(forwards) + ", " +
                       std::to_string(switches.value_or(0))
                 : "—")
        << "</td></tr>\n";
  }
  out << "</table>\n";
}

}  // namespace

std::string base64(const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t a = static_cast<unsigned char>(bytes[i]);
    const uint32_t b = i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) : 0;
    const uint32_t c = i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0;
    const uint32_t triple = (a << 16) | (b << 8) | c;
    out += alphabet[(triple >> 18) & 63];
    out += alphabet[(triple >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(triple >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[triple & 63] : '=';
  }
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void write_report_html(const std::string& dir, const std::vector<run_data>& runs,
                       const std::vector<report_plot>& plots) {
  std::string names;
  for (const auto& run : runs) names += (names.empty() ? "" : " vs ") + run.name;
  std::ostringstream missing;
  for (const auto& p : plots) {
    if (!p.missing.empty())
      missing << "<li><b>" << html_escape(p.title) << "</b>: " << html_escape(p.missing) << "</li>\n";
    for (const auto& note : p.notes)
      missing << "<li>" << html_escape(p.title) << ": " << html_escape(note) << "</li>\n";
  }

  write_file_atomically((fs::path(dir) / "report.html").string(), [&](std::ostream& out) {
    out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>petra report: "
        << html_escape(names) << "</title>\n<style>" << style << "</style></head><body>\n"
        << "<h1>petra report</h1>\n<p>";
    for (size_t r = 0; r < runs.size(); ++r)
      out << (r ? " &nbsp; " : "") << swatch(r) << "<b>" << html_escape(runs[r].name) << "</b> ("
          << html_escape(runs[r].dir) << ")";
    out << "</p>\n<h2 id=\"summary\">Summary</h2>\n";
    summary_table(out, runs);
    if (missing.tellp() > 0)
      out << "<h2 id=\"missing\">Not shown</h2>\n<ul class=\"missing\">\n" << missing.str() << "</ul>\n";
    for (const auto& p : plots) {
      if (!p.missing.empty()) continue;
      out << "<h2 id=\"" << p.name << "\">" << html_escape(p.title)
          << "</h2>\n<figure><img src=\"data:image/png;base64," << base64(read_file(fs::path(dir) / p.file()))
          << "\" alt=\"" << html_escape(p.title) << "\" data-file=\"" << p.file() << "\">\n<figcaption>"
          << html_escape(p.caption) << " File: <a href=\"" << p.file() << "\">" << p.file()
          << "</a>, redrawn by <code>gnuplot " << p.name << ".gp</code>.</figcaption></figure>\n";
    }
    out << "<h2 id=\"stages\">Stages</h2>\n";
    for (size_t r = 0; r < runs.size(); ++r) stage_table(out, runs[r], r);
    out << "<h2 id=\"config\">Configs</h2>\n";
    for (size_t r = 0; r < runs.size(); ++r)
      out << "<details" << (r == 0 ? " open" : "") << "><summary>" << swatch(r) << html_escape(runs[r].name)
          << ": config.yaml</summary>\n<pre>" << html_escape(runs[r].config_yaml) << "</pre></details>\n";
    out << "</body></html>\n";
  });
}

}  // namespace petra::app
