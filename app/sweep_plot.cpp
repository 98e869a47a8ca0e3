// accuracy.png of `petra sweep`: final test accuracy against the swept values, drawn by gnuplot
// (app/gnuplot.hpp) from a script kept beside the plot.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "app/gnuplot.hpp"
#include "app/sweep_report.hpp"

namespace petra::app {
namespace {

bool parse_number(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0';
}

}  // namespace

std::string write_accuracy_plot(const std::string& dir, const std::vector<grid_axis>& axes,
                                const std::vector<point_result>& results) {
  if (find_gnuplot().empty()) return "gnuplot not found";
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

  std::ostringstream body;
  body << "set title " << gnuplot_string("final test accuracy against " + keys) << "\n"
       << "set xlabel " << gnuplot_string(keys) << "\n"
       << "set ylabel \"test accuracy (%)\"\n"
       << "set grid\nset key off\n"
       << "set yrange [" << std::max(0.0, y_min - y_margin) << ":" << y_max + y_margin << "]\n";
  if (numeric) {
    body << "set xrange [" << x_min - x_margin << ":" << x_max + x_margin << "]\n";
  } else {
    body << "set xtics (" << labels << ")";
    if (longest_label > 12) body << " rotate by -25";
    body << "\nset xrange [0.5:" << results.size() + 0.5 << "]\n";
  }
  body << "$accuracy << EOD\n"
       << data.str() << "EOD\n"
       << "plot $accuracy using 1:2 with linespoints linewidth 2 pointtype 7 pointsize 1.5, \\\n"
       << "     $accuracy using 1:2:(sprintf(\"%.1f%%\", $2)) with labels offset 0,1.2\n";
  return run_gnuplot(dir, "accuracy", 960, 600,
                     "petra sweep: final test accuracy per grid point, failed runs left out.", body.str());
}

}  // namespace petra::app
