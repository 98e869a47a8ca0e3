// The per-stage plots of `petra report`: staleness histograms beside the expected 2(J−j)/k, and
// busy fraction as bars with each run's bottleneck stage marked.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "app/gnuplot.hpp"
#include "app/report_plots.hpp"

namespace petra::app {
namespace {

/// A number with at most two decimals: 3.5, 6, 0.33.
std::string short_number(double v) {
  std::ostringstream out;
  out << std::round(v * 100) / 100;
  return out.str();
}

/// The staleness histogram of `stage`, summed over the run's epochs.
std::map<int64_t, int64_t> staleness_of(const run_data& run, int stage) {
  std::map<int64_t, int64_t> total;
  for (const auto& e : run.epochs)
    for (const auto& s : e.stages)
      if (s.stage == stage)
        for (const auto& [value, count] : s.staleness_steps) total[value] += count;
  return total;
}

/// The busy fraction of `stage` over the run's epochs, weighted by epoch time; none when no
/// epoch measured it (simulate measures none: it reports 0).
std::optional<double> busy_of(const run_data& run, int stage) {
  double weighted = 0, weight = 0;
  bool measured = false;
  for (const auto& e : run.epochs)
    for (const auto& s : e.stages)
      if (s.stage == stage && s.busy_fraction) {
        const double w = e.epoch_seconds.value_or(1.0);
        weighted += *s.busy_fraction * w;
        weight += w;
        measured = measured || *s.busy_fraction > 0;
      }
  if (!measured || weight <= 0) return std::nullopt;
  return weighted / weight;
}

}  // namespace

report_plot draw_staleness(const std::string& dir, const std::vector<run_data>& runs) {
  report_plot p{"staleness",
                "Staleness per stage",
                "Measured staleness of each backward (optimizer steps between the forward's weights and the "
                "backward's), as % of the stage's backwards over all epochs; dashed: the expected 2(J−j)/k "
                "(0 for backprop).",
                "",
                {}};
  int stage_count = 0;
  for (const auto& run : runs) stage_count = std::max(stage_count, run.stage_count);
  if (stage_count == 0) {
    p.missing = "no epoch line has per-stage measurements (\"stages\")";
    return p;
  }
  const auto [rows, columns] = plot::grid(stage_count, 4);
  const int height = plot::panels_height(rows);
  const double width = 0.8 / static_cast<double>(runs.size());
  std::ostringstream body;
  body << "set grid ytics\nset style fill solid 0.75 border -1\nset boxwidth " << width << "\n"
       << "set yrange [0:108]\nset xlabel \"staleness (steps)\"\nunset key\n"
       << plot::multiplot(rows, columns, height);
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t r = 0; r < runs.size(); ++r) entries.emplace_back("■ " + runs[r].name, run_colour(r));
  entries.emplace_back("▼┆ expected 2(J−j)/k", "black");
  const auto legend = plot::top_legend(entries);
  for (int stage = 1; stage <= stage_count; ++stage) {
    std::ostringstream plots;
    int64_t low = 0, high = 0;
    std::string title = "stage " + std::to_string(stage);
    for (size_t r = 0; r < runs.size(); ++r) {
      if (stage > runs[r].stage_count) continue;
      const auto histogram = staleness_of(runs[r], stage);
      const double expected = runs[r].expected_staleness(stage);
      high = std::max<int64_t>(high, static_cast<int64_t>(std::ceil(expected)));
      if (runs.size() == 1) title += " (expected " + short_number(expected) + ")";
      // The expected value: a dashed line, and a triangle in the run's colour on top of it.
      body << "set arrow " << r + 1 << " from " << expected << ", graph 0 to " << expected
           << ", graph 1 nohead dt 2 lw 1.5 lc rgb \"black\" front\n"
           << "set label " << r + 1 << " \"\" at " << expected << ", graph 1 point pt 11 ps 1.6 lc rgb \""
           << run_colour(r) << "\" front\n";
      int64_t total = 0;
      for (const auto& [value, count] : histogram) total += count;
      if (total == 0) continue;
      body << "$s" << stage << "r" << r << " << EOD\n";
      for (const auto& [value, count] : histogram) {
        body << value << " " << 100.0 * count / total << "\n";
        low = std::min(low, value);
        high = std::max(high, value);
      }
      body << "EOD\n";
      const double offset = (static_cast<double>(r) - (runs.size() - 1) / 2.0) * width;
      plots << (plots.tellp() > 0 ? ", " : "plot ") << "$s" << stage << "r" << r << " using ($1+" << offset
            << "):2 with boxes lc rgb \"" << run_colour(r) << "\" notitle";
    }
    if (plots.tellp() == 0) plots << "plot NaN notitle";
    body << "set title " << gnuplot_string(title) << "\n"
         << "set xrange [" << low - 0.6 << ":" << high + 0.6 << "]\n"
         << (high - low <= 16 ? "set xtics 1\n" : "set xtics autofreq\n")
         << ((stage - 1) % columns == 0 ? "set ylabel \"% of backwards\"\n" : "unset ylabel\n")
         << (stage == 1 ? legend.first : "") << plots.str() << "\n"
         << (stage == 1 ? legend.second : "");
    for (size_t r = 0; r < runs.size(); ++r)
      body << "unset arrow " << r + 1 << "\nunset label " << r + 1 << "\n";
  }
  body << "unset multiplot\n";
  plot::draw(dir, p, 1000, height, body.str());
  return p;
}

report_plot draw_busy_fraction(const std::string& dir, const std::vector<run_data>& runs) {
  report_plot p{"busy",
                "Busy fraction per stage",
                "Share of wall time each stage actor spent computing, weighted over the epochs; the busiest "
                "stage of each run (the bottleneck) is labelled.",
                "",
                {}};
  int stage_count = 0;
  double top = 0;
  std::vector<std::vector<std::optional<double>>> busy(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    for (int stage = 1; stage <= runs[r].stage_count; ++stage) busy[r].push_back(busy_of(runs[r], stage));
    const bool measured =
        std::any_of(busy[r].begin(), busy[r].end(), [](const auto& b) { return b.has_value(); });
    if (!measured) {
      p.notes.push_back(runs[r].name +
                        ": no busy time (measured by the actor runtimes, runtime.mode lockstep or "
                        "async; this run used " +
                        config::to_string(runs[r].runtime) + ")");
      busy[r].clear();
      continue;
    }
    stage_count = std::max(stage_count, runs[r].stage_count);
    for (const auto& b : busy[r]) top = std::max(top, b.value_or(0));
  }
  if (stage_count == 0) {
    p.missing =
        "no busy time: it is measured by the actor runtimes (runtime.mode lockstep or async); "
        "these runs used simulate";
    p.notes.clear();
    return p;
  }
  const double width = 0.8 / static_cast<double>(runs.size());
  std::ostringstream data, plots, labels;
  for (size_t r = 0; r < runs.size(); ++r) {
    if (busy[r].empty()) continue;
    const double offset = (static_cast<double>(r) - (runs.size() - 1) / 2.0) * width;
    data << "$run" << r << " << EOD\n";
    size_t bottleneck = 0;
    for (size_t s = 0; s < busy[r].size(); ++s) {
      data << s + 1 << " "
           << plot::value(busy[r][s] ? std::optional<double>(100 * *busy[r][s]) : std::nullopt) << "\n";
      if (busy[r][s].value_or(-1) > busy[r][bottleneck].value_or(-1)) bottleneck = s;
    }
    data << "EOD\n";
    labels << "set label " << r + 1 << " \"bottleneck\" at " << bottleneck + 1 + offset << ","
           << 100 * busy[r][bottleneck].value_or(0) << " center offset 0," << 0.8 + 1.2 * r << " tc rgb \""
           << run_colour(r) << "\" front boxed\n";
    plots << (plots.tellp() > 0 ? ", " : "plot ") << "$run" << r << " using ($1+" << offset
          << "):2 with boxes lc rgb \"" << run_colour(r) << "\" title " << gnuplot_string(runs[r].name);
  }
  std::ostringstream body;
  body << data.str() << labels.str() << "set style textbox opaque noborder\n"
       << "set grid ytics\nset style fill solid 0.75 border -1\n"
       << "set boxwidth " << width << "\nset xlabel \"stage\"\nset ylabel \"busy (% of wall time)\"\n"
       << "set xrange [0.4:" << stage_count + 0.6 << "]\nset xtics 1\n"
       << "set yrange [0:" << std::min(115.0, std::max(10.0, 100 * top * 1.2 + 5)) << "]\nset key top right\n"
       << plots.str() << "\n";
  plot::draw(dir, p, 1000, 420, body.str());
  return p;
}

std::string run_colour(std::size_t index) {
  static const char* const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                        "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
  return palette[index % (sizeof palette / sizeof palette[0])];
}

namespace plot {

std::string value(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return "NaN";
  std::ostringstream out;
  out.precision(9);
  out << *v;
  return out.str();
}

std::string line_style(std::size_t index, std::size_t points, const std::string& title) {
  return std::string(points > 40 ? "with lines lw 2" : "with linespoints lw 2 pt 7 ps 0.8") + " lc rgb \"" +
         run_colour(index) + "\" title " + gnuplot_string(title);
}

void draw(const std::string& dir, const report_plot& plot, int width, int height, const std::string& body) {
  const std::string why = run_gnuplot(dir, plot.name, width, height, "petra report: " + plot.title, body);
  if (!why.empty()) throw std::runtime_error("the plot " + plot.file() + " was not drawn: " + why);
}

std::pair<int, int> grid(int panels, int max_columns) {
  const int columns = std::max(1, std::min(panels, max_columns));
  return {(panels + columns - 1) / columns, columns};
}

int panels_height(int rows) { return 40 + 270 * rows; }

std::string multiplot(int rows, int columns, int height) {
  const double h = height;
  std::ostringstream out;
  out << "set multiplot layout " << rows << "," << columns << " margins 0.07,0.98," << 55 / h << ","
      << 1 - 70 / h << " spacing " << (columns > 1 ? 0.07 : 0.0) << "," << 105 / h << "\n";
  return out.str();
}

std::pair<std::string, std::string> top_legend(
    const std::vector<std::pair<std::string, std::string>>& entries) {
  auto characters = [](const std::string& text) {  // UTF-8 code points
    return std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
  };
  const double per_character = 0.0075, gap = 4;  // of the width: font size 11 on 1000 pixels
  double total = 0;
  for (const auto& [text, colour] : entries) total += characters(text) + gap;
  double x = 0.5 - (total - gap) * per_character / 2;
  std::ostringstream set, unset;
  for (size_t i = 0; i < entries.size(); ++i) {
    set << "set label " << 100 + i << " " << gnuplot_string(entries[i].first) << " at screen " << x
        << ", screen 0.985 left tc rgb \"" << entries[i].second << "\" front\n";
    unset << "unset label " << 100 + i << "\n";
    x += (characters(entries[i].first) + gap) * per_character;
  }
  return {set.str(), unset.str()};
}

}  // namespace plot

std::vector<report_plot> draw_report_plots(const std::string& dir, const std::vector<run_data>& runs) {
  return {draw_training_curves(dir, runs), draw_test_accuracy(dir, runs), draw_staleness(dir, runs),
          draw_inversion_error(dir, runs), draw_busy_fraction(dir, runs), draw_stage_time(dir, runs),
          draw_throughput(dir, runs)};
}

}  // namespace petra::app
