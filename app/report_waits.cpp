// The `petra report` plot of where each stage's time goes: computing, waiting for input, waiting for
// a gradient, and the rest, stacked per stage, one panel per run (actor runtimes measure them).
#include <algorithm>
#include <sstream>

#include "app/gnuplot.hpp"
#include "app/report_plots.hpp"

namespace petra::app {
namespace {

/// One stage's seconds summed over a run's epochs, and the epochs' wall time they fall in.
struct stage_time {
  double busy = 0, input = 0, gradient = 0, other = 0, wall = 0;
};

/// Per stage (index stage − 1): empty when no epoch line of the run has the waits.
std::vector<stage_time> times_of(const run_data& run) {
  std::vector<stage_time> out(static_cast<std::size_t>(std::max(0, run.stage_count)));
  bool measured = false;
  for (const auto& e : run.epochs)
    for (const auto& s : e.stages) {
      if (s.stage < 1 || s.stage > run.stage_count || !s.wait_input_seconds || !e.epoch_seconds) continue;
      stage_time& t = out[static_cast<std::size_t>(s.stage - 1)];
      t.busy += s.busy_seconds;
      t.input += *s.wait_input_seconds;
      t.gradient += s.wait_gradient_seconds.value_or(0);
      t.other += s.other_seconds.value_or(0);
      t.wall += *e.epoch_seconds;
      measured = measured || s.busy_seconds > 0;  // simulate writes zeros (its time is all "other")
    }
  if (!measured) out.clear();
  return out;
}

}  // namespace

report_plot draw_stage_time(const std::string& dir, const std::vector<run_data>& runs) {
  report_plot p{"waits",
                "Where each stage's time goes",
                "Per stage, summed over the epochs, as % of the epochs' wall time: computing (busy), waiting "
                "for input (the stage before, or the loader, has not sent it), waiting for a gradient (its "
                "backward's, the loss's, or one that frees its window), and the rest (message handling, "
                "hand-over). The busiest stage sets the pipeline's rate; the others' waits are its cost.",
                "",
                {}};
  std::vector<std::pair<std::size_t, std::vector<stage_time>>> drawn;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::vector<stage_time> times = times_of(runs[r]);
    if (times.empty())
      p.notes.push_back(runs[r].name +
                        ": no per-stage waits (measured by the actor runtimes, runtime.mode "
                        "lockstep or async; this run used " +
                        config::to_string(runs[r].runtime) +
                        ", or wrote its epoch lines before they had them)");
    else
      drawn.emplace_back(r, std::move(times));
  }
  if (drawn.empty()) {
    p.missing =
        "no per-stage waits: they are measured by the actor runtimes (runtime.mode lockstep or async)";
    p.notes.clear();
    return p;
  }
  const int rows = static_cast<int>(drawn.size());
  const int height = 120 + 300 * rows;
  std::ostringstream body;
  body << "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
       << "set boxwidth 0.7\nset grid ytics\nset yrange [0:105]\nset ylabel \"% of wall time\"\n"
       << "set key outside right top\nset multiplot layout " << rows << ",1\n";
  for (const auto& [r, times] : drawn) {
    body << "$w" << r << " << EOD\n";
    for (std::size_t s = 0; s < times.size(); ++s) {
      const stage_time& t = times[s];
      const double scale = t.wall > 0 ? 100 / t.wall : 0;
      body << s + 1 << " " << plot::value(t.busy * scale) << " " << plot::value(t.input * scale) << " "
           << plot::value(t.gradient * scale) << " " << plot::value(t.other * scale) << "\n";
    }
    body << "EOD\n"
         << "set title " << gnuplot_string(runs[r].name) << " tc rgb \"" << run_colour(r) << "\"\n"
         << "set xlabel \"stage\"\n"
         << "plot $w" << r << " using 2:xtic(1) title \"computing\" lc rgb \"#2ca02c\", '' using 3 title "
         << "\"waiting for input\" lc rgb \"#1f77b4\", '' using 4 title \"waiting for a gradient\" lc rgb "
         << "\"#ff7f0e\", '' using 5 title \"other\" lc rgb \"#7f7f7f\"\n";
  }
  body << "unset multiplot\n";
  plot::draw(dir, p, 1000, height, body.str());
  return p;
}

}  // namespace petra::app
