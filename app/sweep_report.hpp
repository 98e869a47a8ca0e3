// The parts of `petra sweep` around the runs: the grid (parsing its values, the product of its
// axes) and the report (each run's metrics read back, results.md, results.csv, accuracy.png).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace petra::app {

/// One `--grid key=v1,v2,...`: a config key and the values it takes (each a YAML scalar or list).
struct grid_axis {
  std::string key;
  std::vector<std::string> values;
};

/// "v1,v2,..." split on the commas that lie outside brackets, braces and quotes, so that
/// "[0,0],[0,4]" is two values; each value is trimmed. Throws std::invalid_argument on an
/// empty value or unbalanced brackets.
std::vector<std::string> split_grid_values(const std::string& text);

/// "key=v1,v2,..." as an axis. Throws std::invalid_argument naming the flag when malformed.
grid_axis parse_grid_axis(const std::string& text);

/// Every combination of one value per axis, the last axis varying fastest (∏ |values| points).
std::vector<std::vector<std::string>> grid_points(const std::vector<grid_axis>& axes);

/// A directory name for point `index` (1-based): "p<index>-<last key segment>-<value>..." with
/// every character outside [A-Za-z0-9._-] replaced, e.g. "p2-backward_delay-0_0_2_0_0".
std::string point_name(int index, const std::vector<grid_axis>& axes, const std::vector<std::string>& values);

/// What one stage measured in the last epoch (means of the metrics.jsonl histograms).
struct stage_summary {
  double mean_delay_ticks = 0;                 // Σ delay·count / Σ count
  double mean_staleness_steps = 0;             // Σ staleness·count / Σ count
  std::optional<double> inversion_error_mean;  // reversible stages that sampled it
};

/// One grid point's run, as the report shows it.
struct point_result {
  std::vector<std::string> values;  // one per axis
  std::string run_name;             // its directory under runs/
  int exit_code = -1;               // of train_command; -1 = not run yet
  bool has_epoch = false;           // a finished epoch was logged
  bool has_summary = false;         // the run logged its summary
  double test_accuracy = 0;         // in [0, 1]
  double train_loss = 0;
  double images_per_s = 0;
  double wall_seconds = 0;
  std::vector<stage_summary> stages;
  /// Mean of inversion_error_mean over the stages that report it.
  std::optional<double> inversion_error_mean() const;
  bool succeeded() const { return exit_code == 0 && has_summary; }
};

/// Fills the measured fields of `result` from `<run_dir>/metrics.jsonl`: the last epoch event
/// (train loss, stages, and accuracy, throughput until a summary says otherwise) and the summary
/// (final test accuracy, wall time, images/s). A missing file leaves them unset.
void read_run_metrics(const std::string& run_dir, point_result& result);

/// results.md: a Markdown table, one row per point (failed runs marked), atomically written.
void write_results_markdown(const std::string& path, const std::string& title,
                            const std::vector<grid_axis>& axes, const std::vector<point_result>& results);

/// results.csv: the same with one column per stage measurement, atomically written.
void write_results_csv(const std::string& path, const std::vector<grid_axis>& axes,
                       const std::vector<point_result>& results);

/// accuracy.png in `dir`: final test accuracy against the swept value (numeric x for a single
/// numeric axis, else the point index labelled with the values), drawn by gnuplot from an
/// accuracy.gp script left beside it. Returns "" when written, else why not ("gnuplot not found").
std::string write_accuracy_plot(const std::string& dir, const std::vector<grid_axis>& axes,
                                const std::vector<point_result>& results);

}  // namespace petra::app
