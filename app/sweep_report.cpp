// The grid of `petra sweep` and its tables: values split bracket-aware, the product of the axes,
// each run's metrics.jsonl read back, results.md and results.csv (the plot is in sweep_plot.cpp).
#include "app/sweep_report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "compute/serialize/atomic_file.hpp"
#include "training/metrics_records.hpp"

namespace petra::app {
namespace {

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

/// 12.5 → "12.5", 8 → "8", with at most `decimals` decimals.
std::string number(double value, int decimals) {
  if (!std::isfinite(value)) return "nan";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  std::string s = text;
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

/// Σ value·count / Σ count of a histogram.
double histogram_mean(const std::map<int64_t, int64_t>& histogram) {
  double weighted = 0, total = 0;
  for (const auto& [value, count] : histogram) {
    weighted += static_cast<double>(value) * static_cast<double>(count);
    total += static_cast<double>(count);
  }
  return total > 0 ? weighted / total : 0.0;
}

std::string status(const point_result& r) {
  if (r.exit_code < 0) return "not run";
  if (r.succeeded()) return "ok";
  return "failed (exit " + std::to_string(r.exit_code) + ")";
}

size_t stage_columns(const std::vector<point_result>& results) {
  size_t most = 0;
  for (const auto& r : results) most = std::max(most, r.stages.size());
  return most;
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::vector<std::string> split_grid_values(const std::string& text) {
  std::vector<std::string> values;
  std::vector<char> open;  // the brackets not yet closed, innermost last
  char quote = 0;
  std::string current;
  auto finish = [&] {
    const std::string value = trim(current);
    if (value.empty())
      throw std::invalid_argument("empty value in '" + text +
                                  "': write values separated by commas, e.g. 1,2,4");
    values.push_back(value);
    current.clear();
  };
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      open.push_back(c == '[' ? ']' : '}');
    } else if (c == ']' || c == '}') {
      if (open.empty() || open.back() != c)
        throw std::invalid_argument("unbalanced '" + std::string(1, c) + "' in '" + text + "'");
      open.pop_back();
    } else if (c == ',' && open.empty()) {
      finish();
      continue;
    }
    current += c;
  }
  if (quote != 0) throw std::invalid_argument("unterminated quote in '" + text + "'");
  if (!open.empty())
    throw std::invalid_argument("unclosed '" + std::string(1, open.back() == ']' ? '[' : '{') + "' in '" +
                                text + "'");
  finish();
  return values;
}

grid_axis parse_grid_axis(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    throw std::invalid_argument("--grid '" + text +
                                "': expected key=v1,v2,..., e.g. --grid training.accumulation=1,2");
  grid_axis axis;
  axis.key = trim(text.substr(0, equals));
  if (axis.key.empty() || axis.key.find_first_of(" \t") != std::string::npos)
    throw std::invalid_argument("--grid '" + text + "': '" + axis.key +
                                "' is not a config key (like training.epochs)");
  try {
    axis.values = split_grid_values(text.substr(equals + 1));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("--grid " + axis.key + ": " + e.what());
  }
  return axis;
}

std::vector<std::vector<std::string>> grid_points(const std::vector<grid_axis>& axes) {
  std::vector<std::vector<std::string>> points(1);
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> longer;
    for (const auto& point : points)
      for (const auto& value : axis.values) {
        longer.push_back(point);
        longer.back().push_back(value);
      }
    points = std::move(longer);
  }
  return points;
}

std::string point_name(int index, const std::vector<grid_axis>& axes,
                       const std::vector<std::string>& values) {
  auto safe = [](const std::string& text) {
    std::string out;
    for (char c : text) {
      const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
      if (keep)
        out += c;
      else if (!out.empty() && out.back() != '_')
        out += '_';
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out;
  };
  std::string name = "p" + std::to_string(index);
  for (size_t a = 0; a < axes.size() && a < values.size(); ++a) {
    const std::string& key = axes[a].key;
    name += "-" + safe(key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1)) + "-" +
            safe(values[a]);
  }
  return name.size() > 120 ? name.substr(0, 120) : name;
}

std::optional<double> point_result::inversion_error_mean() const {
  double sum = 0;
  int count = 0;
  for (const auto& s : stages)
    if (s.inversion_error_mean) sum += *s.inversion_error_mean, ++count;
  if (count == 0) return std::nullopt;
  return sum / count;
}

void read_run_metrics(const std::string& run_dir, point_result& result) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object()) continue;  // a line cut short by a crash
    const auto event = record.find("event");
    if (event == record.end() || !event->is_string()) continue;
    try {  // through training's descriptions of the lines
      if (*event == "epoch") {
        const auto epoch = json_record::read<epoch_record>(record);
        result.has_epoch = true;
        result.train_loss = epoch.train_loss.value_or(0.0);
        result.test_accuracy = epoch.test_accuracy.value_or(0.0);
        result.images_per_s = epoch.images_per_s.value_or(0.0);
        result.stages.clear();
        for (const stage_record& s : epoch.stages)
          result.stages.push_back(
              {histogram_mean(s.delay_ticks), histogram_mean(s.staleness_steps), s.inversion_error_mean});
      } else if (*event == "summary") {
        const auto summary = json_record::read<summary_record>(record);
        result.has_summary = true;
        result.test_accuracy = summary.test_accuracy.value_or(result.test_accuracy);
        result.wall_seconds = summary.wall_seconds.value_or(0.0);
        result.images_per_s = summary.images_per_s.value_or(result.images_per_s);
      }
    } catch (const json_record::field_error&) {
      continue;  // a line of another shape: not one petra wrote
    }
  }
}

void write_results_markdown(const std::string& path, const std::string& title,
                            const std::vector<grid_axis>& axes, const std::vector<point_result>& results) {
  write_file_atomically(path, [&](std::ostream& out) {
    out << "# " << title << "\n\n";
    out << "| # |";
    for (const auto& axis : axes) out << " " << markdown_cell(axis.key) << " |";
    out << " status | test acc (%) | train loss | img/s | wall (s) | mean delay per stage (ticks) |"
           " mean staleness per stage (steps) | inversion error |\n|---:|";
    for (size_t a = 0; a < axes.size(); ++a) out << "---|";
    out << "---|---:|---:|---:|---:|---|---|---:|\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const point_result& r = results[i];
      out << "| " << i + 1 << " |";
      for (const auto& value : r.values) out << " `" << markdown_cell(value) << "` |";
      out << " " << status(r) << " |";
      if (!r.has_epoch) {
        out << " — | — | — | — | — | — | — |\n";
        continue;
      }
      std::string delays, staleness;
      for (const auto& s : r.stages) {
        delays += (delays.empty() ? "" : " / ") + number(s.mean_delay_ticks, 2);
        staleness += (staleness.empty() ? "" : " / ") + number(s.mean_staleness_steps, 2);
      }
      const auto inversion = r.inversion_error_mean();
      char inversion_text[32] = "—";
      if (inversion) std::snprintf(inversion_text, sizeof inversion_text, "%.2e", *inversion);
      out << " " << number(100 * r.test_accuracy, 2) << " | " << number(r.train_loss, 4) << " | "
          << number(r.images_per_s, 0) << " | " << (r.has_summary ? number(r.wall_seconds, 1) : "—") << " | "
          << delays << " | " << staleness << " | " << inversion_text << " |\n";
    }
    out << "\nDelay: ticks from a stage's forward to its backward of the same micro-batch; staleness: "
           "optimizer "
           "steps between them; both measured in the last epoch, stage 1 first. Inversion error: mean "
           "‖x̃ − x‖/‖x‖ over the reversible stages.\n";
  });
}

void write_results_csv(const std::string& path, const std::vector<grid_axis>& axes,
                       const std::vector<point_result>& results) {
  const size_t stages = stage_columns(results);
  write_file_atomically(path, [&](std::ostream& out) {
    out << "point,run";
    for (const auto& axis : axes) out << "," << csv_field(axis.key);
    out << ",status,exit_code,test_accuracy,train_loss,images_per_s,wall_seconds";
    for (size_t j = 1; j <= stages; ++j) out << ",delay_ticks_" << j;
    for (size_t j = 1; j <= stages; ++j) out << ",staleness_steps_" << j;
    out << ",inversion_error_mean\n";
    for (size_t i = 0; i < results.size(); ++i) {
      const point_result& r = results[i];
      out << i + 1 << "," << csv_field(r.run_name);
      for (const auto& value : r.values) out << "," << csv_field(value);
      out << "," << csv_field(status(r)) << "," << r.exit_code;
      auto measured = [&](double value, int decimals) {
        return r.has_epoch ? number(value, decimals) : std::string();
      };
      out << "," << measured(r.test_accuracy, 6) << "," << measured(r.train_loss, 6) << ","
          << measured(r.images_per_s, 2) << "," << (r.has_summary ? number(r.wall_seconds, 3) : "");
      for (size_t j = 0; j < stages; ++j)
        out << "," << (j < r.stages.size() ? number(r.stages[j].mean_delay_ticks, 4) : "");
      for (size_t j = 0; j < stages; ++j)
        out << "," << (j < r.stages.size() ? number(r.stages[j].mean_staleness_steps, 4) : "");
      const auto inversion = r.inversion_error_mean();
      char inversion_text[32] = "";
      if (inversion) std::snprintf(inversion_text, sizeof inversion_text, "%.6e", *inversion);
      out << "," << inversion_text << "\n";
    }
  });
}

}  // namespace petra::app
