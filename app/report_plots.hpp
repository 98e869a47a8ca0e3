// The plots of `petra report`, drawn by gnuplot: training curves, test accuracy, throughput,
// inversion error, staleness histograms, busy fractions and where each stage's time goes, one colour
// per run.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/report_data.hpp"

namespace petra::app {

/// One plot of the report: drawn (missing empty) or absent, with why.
struct report_plot {
  std::string name;                // file stem: <name>.png and its script <name>.gp
  std::string title;               // heading in report.html
  std::string caption;             // what it shows
  std::string missing;             // "" when drawn, else why it is absent
  std::vector<std::string> notes;  // runs left out of a drawn plot, and why
  std::string file() const { return name + ".png"; }
};

/// The colour of run `index` in every plot and in the HTML ("#1f77b4", ...).
std::string run_colour(std::size_t index);

/// Draws every plot of `runs` into `dir` (PNG and .gp script each). A plot whose data no run has
/// is returned with `missing` set and nothing written. Throws std::runtime_error when gnuplot
/// is absent or fails.
std::vector<report_plot> draw_report_plots(const std::string& dir, const std::vector<run_data>& runs);

// The plots themselves (report_curves.cpp, report_bars.cpp): each draws into `dir` or says why not.
report_plot draw_training_curves(const std::string& dir, const std::vector<run_data>& runs);
report_plot draw_test_accuracy(const std::string& dir, const std::vector<run_data>& runs);
report_plot draw_throughput(const std::string& dir, const std::vector<run_data>& runs);
report_plot draw_inversion_error(const std::string& dir, const std::vector<run_data>& runs);
report_plot draw_staleness(const std::string& dir, const std::vector<run_data>& runs);
report_plot draw_busy_fraction(const std::string& dir, const std::vector<run_data>& runs);
/// Per stage: computing, waiting for input, for a gradient, the rest (report_waits.cpp).
report_plot draw_stage_time(const std::string& dir, const std::vector<run_data>& runs);

/// Helpers the plots share.
namespace plot {
/// A number for a gnuplot data block ("NaN" when absent or not finite).
std::string value(const std::optional<double>& v);
/// `lines` for long series, `linespoints` for short ones, with run `index`'s colour and title.
std::string line_style(std::size_t index, std::size_t points, const std::string& title);
/// Draws `body` as <dir>/<name>.png; throws std::runtime_error naming the plot on failure.
void draw(const std::string& dir, const report_plot& plot, int width, int height, const std::string& body);
/// Rows × columns of a multiplot of `panels` panels, at most `max_columns` wide.
std::pair<int, int> grid(int panels, int max_columns);
/// The image height (pixels) of a multiplot of `rows` rows of panels under a one-line legend.
int panels_height(int rows);
/// `set multiplot` of rows × columns panels in an image `height` pixels tall, leaving a band at the
/// top for a legend (`top_legend`).
std::string multiplot(int rows, int columns, int height);
/// Labels drawing one legend line centred across the top of a 1000-pixel-wide image, one entry
/// per (text, colour); and the commands that remove them (after the first panel has drawn them).
std::pair<std::string, std::string> top_legend(
    const std::vector<std::pair<std::string, std::string>>& entries);
}  // namespace plot

}  // namespace petra::app
