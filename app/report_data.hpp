// What `petra report` reads from a run directory: config.yaml and metrics.jsonl (epoch, step,
// failure and summary lines), checked line by line; unknown keys and events are ignored.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "training/metrics_records.hpp"
#include "training/step_lines.hpp"

namespace petra::app {

/// Bad input to `petra report` (a missing run directory, a malformed metrics line): the message
/// names the file and line and says what to do; the command exits with code 2.
class report_input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The lines as training describes them: what it writes is what the report reads.
using epoch_line = epoch_record;
using step_line = step_record;
using summary_line = summary_record;

/// A block that moved between stages (pipeline.rebalance), on the step lines' clock.
struct rebalance_mark {
  double seconds = 0;
  int block = 0, from = 0, to = 0;  // 1-based
};

/// One run directory as the report shows it.
struct run_data {
  std::string dir;          // as given
  std::string name;         // its last path component (made unique among the runs by the caller)
  std::string config_yaml;  // config.yaml, verbatim
  config::training_method method = config::training_method::petra;
  config::runtime_mode runtime = config::runtime_mode::simulate;
  int accumulation = 1;  // training.accumulation (k)
  int stage_count = 0;   // J, from the epoch lines
  std::vector<epoch_line> epochs;
  std::vector<step_line> steps;
  std::optional<summary_line> summary;
  std::vector<std::string> failures;  // the "what" of each failure line
  std::vector<rebalance_mark> moves;  // the rebalance lines

  /// 2(J−j)/k, by training's staleness_steps: the staleness in optimizer steps PETRA's schedule
  /// gives stage j (0 for backprop).
  double expected_staleness(int stage) const;
};

/// Reads `<dir>/config.yaml` and `<dir>/metrics.jsonl`. Throws report_input_error when the
/// directory, either file or any epoch line is missing, or a line is not a JSON object of the
/// documented shape (naming the file and the 1-based line).
run_data read_run(const std::string& dir);

}  // namespace petra::app
