// The curves of `petra report`: training loss and accuracy and inversion error against optimizer
// steps (step lines), test accuracy against epochs, images/s against training time.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "app/gnuplot.hpp"
#include "app/report_plots.hpp"

namespace petra::app {
namespace {

const char* no_steps = "no step lines: set output.metrics_every_steps to log them";

std::string percent(const std::optional<double>& v) {
  return plot::value(v ? std::optional<double>(100 * *v) : std::nullopt);
}

bool any_steps(const std::vector<run_data>& runs) {
  return std::any_of(runs.begin(), runs.end(), [](const run_data& r) { return !r.steps.empty(); });
}

}  // namespace

report_plot draw_training_curves(const std::string& dir, const std::vector<run_data>& runs) {
  report_plot p{"training",
                "Training loss and accuracy",
                "Means over each step line's window of micro-batches, against optimizer steps of stage 1.",
                "",
                {}};
  if (!any_steps(runs)) {
    p.missing = no_steps;
    return p;
  }
  std::ostringstream data, loss_plot, accuracy_plot;
  for (size_t r = 0; r < runs.size(); ++r) {
    if (runs[r].steps.empty()) {
      p.notes.push_back(runs[r].name + ": " + no_steps);
      continue;
    }
    data << "$run" << r << " << EOD\n";
    for (const auto& s : runs[r].steps)
      data << s.step << " " << plot::value(s.loss) << " " << percent(s.accuracy) << "\n";
    data << "EOD\n";
    const std::string style = plot::line_style(r, runs[r].steps.size(), runs[r].name);
    loss_plot << (loss_plot.tellp() > 0 ? ", " : "plot ") << "$run" << r << " using 1:2 " << style;
    accuracy_plot << (accuracy_plot.tellp() > 0 ? ", " : "plot ") << "$run" << r << " using 1:3 " << style;
  }
  std::ostringstream body;
  body << data.str() << "set grid\nset key top right\nset multiplot layout 2,1\n"
       << "set ylabel \"training loss\"\nset format x \"\"\nset bmargin 1\n"
       << loss_plot.str() << "\n"
       << "set ylabel \"training accuracy (%)\"\nset xlabel \"optimizer step (stage 1)\"\nset format x\n"
       << "set bmargin\nset tmargin 1\nset key bottom right\n"
       << accuracy_plot.str() << "\nunset multiplot\n";
  plot::draw(dir, p, 1000, 640, body.str());
  return p;
}

report_plot draw_test_accuracy(const std::string& dir, const std::vector<run_data>& runs) {
  report_plot p{"test_accuracy",
                "Accuracy per epoch",
                "Test accuracy after each epoch (solid) and training accuracy over the epoch (dashed).",
                "",
                {}};
  std::ostringstream data, plots;
  int last_epoch = 1;
  for (size_t r = 0; r < runs.size(); ++r) {
    data << "$run" << r << " << EOD\n";
    for (const auto& e : runs[r].epochs) {
      data << e.epoch << " " << percent(e.test_accuracy) << " " << percent(e.train_accuracy) << "\n";
      last_epoch = std::max(last_epoch, e.epoch);
    }
    data << "EOD\n";
    plots << (r == 0 ? "plot " : ", ") << "$run" << r << " using 1:2 with linespoints lw 2 pt 7 lc rgb \""
          << run_colour(r) << "\" title " << gnuplot_string(runs[r].name + " test") << ", $run" << r
          << " using 1:3 with linespoints lw 1.5 dt 2 pt 6 lc rgb \"" << run_colour(r) << "\" title "
          << gnuplot_string(runs[r].name + " train");
  }
  std::ostringstream body;
  body << data.str() << "set grid\nset key bottom right\nset xlabel \"epoch\"\nset ylabel \"accuracy (%)\"\n"
       << "set xrange [0.5:" << last_epoch + 0.5 << "]\n";
  if (last_epoch <= 20) body << "set xtics 1\n";
  body << plots.str() << "\n";
  plot::draw(dir, p, 1000, 420, body.str());
  return p;
}

report_plot draw_throughput(const std::string& dir, const std::vector<run_data>& runs) {
  report_plot p{"throughput",
                "Throughput",
                "Training images per second against training time: per step line where the run has them, "
                "else per epoch (at the epoch's end); a dashed line where pipeline.rebalance moved a block "
                "(labelled from→to stage).",
                "",
                {}};
  std::ostringstream data, plots, marks;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const rebalance_mark& m : runs[r].moves)
      marks << "set arrow from " << m.seconds << ", graph 0 to " << m.seconds
            << ", graph 1 nohead dt 2 lc rgb \"" << run_colour(r) << "\"\nset label \"" << m.from << "→"
            << m.to << "\" at " << m.seconds << ", graph " << 0.97 - 0.05 * static_cast<double>(r)
            << " tc rgb \"" << run_colour(r) << "\"\n";
    data << "$run" << r << " << EOD\n";
    size_t points = 0;
    if (!runs[r].steps.empty()) {
      for (const auto& s : runs[r].steps)
        data << plot::value(s.seconds) << " " << plot::value(s.images_per_s) << "\n";
      points = runs[r].steps.size();
    } else {
      double elapsed = 0;
      for (const auto& e : runs[r].epochs) {
        elapsed += e.epoch_seconds.value_or(0);
        data << elapsed << " " << plot::value(e.images_per_s) << "\n";
      }
      points = 1;  // few points: draw them
      p.notes.push_back(runs[r].name + ": per epoch (" + no_steps + ")");
    }
    data << "EOD\n";
    const std::string title = runs[r].name + (runs[r].steps.empty() ? " (per epoch)" : "");
    plots << (r == 0 ? "plot " : ", ") << "$run" << r << " using 1:2 " << plot::line_style(r, points, title);
  }
  std::ostringstream body;
  body << data.str() << "set grid\nset key bottom right\nset xlabel \"training time (s)\"\n"
       << "set ylabel \"images/s\"\nset yrange [0:*]\nset xrange [0:*]\n"
       << marks.str() << plots.str() << "\n";
  plot::draw(dir, p, 1000, 420, body.str());
  return p;
}

report_plot draw_inversion_error(const std::string& dir, const std::vector<run_data>& runs) {
  report_plot p{
      "inversion",
      "Inversion error per reversible stage",
      "Mean relative rebuild error ‖x̃ − x‖/‖x‖ of each reversible stage over each step line's window "
      "(log scale), against optimizer steps of stage 1.",
      "",
      {}};
  if (!any_steps(runs)) {
    p.missing = no_steps;
    return p;
  }
  std::set<int> stages;
  std::vector<bool> sampled(runs.size(), false);
  for (size_t r = 0; r < runs.size(); ++r)
    for (const auto& s : runs[r].steps)
      for (const auto& st : s.stages)
        if (st.inversion_error_mean && *st.inversion_error_mean > 0) {
          stages.insert(st.stage);
          sampled[r] = true;
        }
  for (size_t r = 0; r < runs.size(); ++r)
    if (!sampled[r])
      p.notes.push_back(runs[r].name + (runs[r].method == config::training_method::backprop
                                            ? ": method backprop rebuilds no input"
                                            : ": no inversion error in its step lines"));
  if (stages.empty()) {
    p.missing =
        "no step line has an inversion error: no run sampled one at a reversible stage (method backprop, "
        "or runtime.inversion_sample_every larger than the step window)";
    return p;
  }
  const auto [rows, columns] = plot::grid(static_cast<int>(stages.size()), 3);
  const int height = plot::panels_height(rows);
  std::ostringstream body;
  body << "set grid\nset logscale y\nset format y \"%.0e\"\nset xlabel \"optimizer step\"\n"
       << "unset key\n"
       << plot::multiplot(rows, columns, height);
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t r = 0; r < runs.size(); ++r)
    if (sampled[r]) entries.emplace_back("━ " + runs[r].name, run_colour(r));
  const auto legend = plot::top_legend(entries);
  int panel = 0;
  for (int stage : stages) {
    std::ostringstream plots;
    for (size_t r = 0; r < runs.size(); ++r) {
      std::ostringstream rows_of_run;
      size_t points = 0;
      for (const auto& s : runs[r].steps)
        for (const auto& st : s.stages)
          if (st.stage == stage && st.inversion_error_mean && *st.inversion_error_mean > 0) {
            rows_of_run << s.step << " " << *st.inversion_error_mean << "\n";
            ++points;
          }
      if (points == 0) continue;
      body << "$s" << stage << "r" << r << " << EOD\n" << rows_of_run.str() << "EOD\n";
      plots << (plots.tellp() > 0 ? ", " : "plot ") << "$s" << stage << "r" << r << " using 1:2 "
            << plot::line_style(r, points, "");
    }
    if (plots.tellp() == 0) plots << "plot NaN notitle";
    body << "set title " << gnuplot_string("stage " + std::to_string(stage)) << "\n"
         << (panel == 0 ? legend.first : "") << plots.str() << "\n"
         << (panel == 0 ? legend.second : "");
    ++panel;
  }
  body << "unset multiplot\n";
  plot::draw(dir, p, 1000, height, body.str());
  return p;
}

}  // namespace petra::app
