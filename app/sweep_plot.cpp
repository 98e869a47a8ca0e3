// accuracy.png of `petra sweep`: a gnuplot script (kept beside the plot, to redraw or restyle it)
// run by the gnuplot found on PATH; the PNG is written to a temp name and renamed, so it is whole.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "app/sweep_report.hpp"
#include "compute/serialize/atomic_file.hpp"

namespace petra::app {
namespace {
namespace fs = std::filesystem;

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (fs::is_regular_file(candidate) && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

/// A gnuplot double-quoted string literal.
std::string gnuplot_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// A POSIX shell single-quoted word.
std::string shell_word(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool parse_number(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0';
}

}  // namespace

std::string write_accuracy_plot(const std::string& dir, const std::vector<grid_axis>& axes,
                                const std::vector<point_result>& results) {
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) return "gnuplot not found";
  bool any = false;
  for (const auto& r : results) any = any || r.succeeded();
  if (!any) return "no run finished";

  // x: the value itself when one numeric axis is swept, else the point's index labelled with its values.
  bool numeric = axes.size() == 1;
  for (const auto& r : results) {
    double ignored = 0;
    numeric = numeric && parse_number(r.values.at(0), ignored);
  }
  std::string keys, labels;
  size_t longest_label = 0;
  for (const auto& axis : axes) keys += (keys.empty() ? "" : ", ") + axis.key;
  std::ostringstream data;
  // Explicit ranges with margins: room for the labels, and no "empty range" warning for one value.
  double x_min = 1e300, x_max = -1e300, y_min = 100, y_max = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    std::string label;
    for (const auto& value : results[i].values) label += (label.empty() ? "" : ", ") + value;
    longest_label = std::max(longest_label, label.size());
    double x = static_cast<double>(i + 1);
    if (numeric)
      parse_number(results[i].values[0], x);
    else
      labels += (labels.empty() ? "" : ", ") + gnuplot_string(label) + " " + std::to_string(i + 1);
    if (!results[i].succeeded()) continue;
    const double y = 100 * results[i].test_accuracy;
    data << x << " " << y << "\n";
    x_min = std::min(x_min, x);
    x_max = std::max(x_max, x);
    y_min = std::min(y_min, y);
    y_max = std::max(y_max, y);
  }
  const double x_margin = x_max > x_min ? 0.08 * (x_max - x_min) : 1.0;
  const double y_margin = std::max(1.0, 0.15 * (y_max - y_min));

  const std::string script = (fs::path(dir) / "accuracy.gp").string();
  write_file_atomically(script, [&](std::ostream& out) {
    out << "# petra sweep: final test accuracy per grid point, failed runs left out.\n"
        << "# Redraw: gnuplot accuracy.gp\n"
        << "set terminal pngcairo size 960,600 noenhanced font \",11\"\n"
        << "set output 'accuracy.png.tmp'\n"
        << "set title " << gnuplot_string("final test accuracy against " + keys) << "\n"
        << "set xlabel " << gnuplot_string(keys) << "\n"
        << "set ylabel \"test accuracy (%)\"\n"
        << "set grid\nset key off\n"
        << "set yrange [" << std::max(0.0, y_min - y_margin) << ":" << y_max + y_margin << "]\n";
    if (numeric) {
      out << "set xrange [" << x_min - x_margin << ":" << x_max + x_margin << "]\n";
    } else {
      out << "set xtics (" << labels << ")";
      if (longest_label > 12) out << " rotate by -25";
      out << "\nset xrange [0.5:" << results.size() + 0.5 << "]\n";
    }
    out << "$accuracy << EOD\n"
        << data.str() << "EOD\n"
        << "plot $accuracy using 1:2 with linespoints linewidth 2 pointtype 7 pointsize 1.5, \\\n"
        << "     $accuracy using 1:2:(sprintf(\"%.1f%%\", $2)) with labels offset 0,1.2\n";
  });

  const fs::path temp = fs::path(dir) / "accuracy.png.tmp";
  const int status =
      std::system(("cd " + shell_word(dir) + " && " + shell_word(gnuplot) + " accuracy.gp").c_str());
  if (status != 0 || !fs::is_regular_file(temp)) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    return "gnuplot failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status) +
           ") on " + script;
  }
  fs::rename(temp, fs::path(dir) / "accuracy.png");
  return "";
}

}  // namespace petra::app
