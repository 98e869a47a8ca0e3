// What `petra report` reads from a run directory: config.yaml and metrics.jsonl (epoch, step,
// failure and summary lines), checked line by line; unknown keys and events are ignored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace petra::app {

/// Bad input to `petra report` (a missing run directory, a malformed metrics line): the message
/// names the file and line and says what to do; the command exits with code 2.
class report_input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One stage of an epoch line.
struct epoch_stage {
  int stage = 0;                               // 1-based
  std::map<int64_t, int64_t> staleness_steps;  // staleness (optimizer steps) → backwards
  std::optional<double> busy_fraction;         // actor runtimes
  std::optional<double> inversion_error_mean;  // reversible stages that sampled it
  std::optional<int64_t> fifo_peak, mailbox_peak;
};

/// One `{"event":"epoch"}` line.
struct epoch_line {
  int epoch = 0;
  std::string runtime;
  std::optional<double> train_loss, train_accuracy, test_loss, test_accuracy, images_per_s, epoch_seconds;
  std::vector<epoch_stage> stages;
};

/// One stage of a step line; null where it has no value (not reversible, no sample in the window).
struct step_stage {
  int stage = 0;
  std::optional<double> staleness_mean, inversion_error_mean;
};

/// One `{"event":"step"}` line: means over the micro-batches since the previous step line.
struct step_line {
  int epoch = 0;
  int64_t step = 0;  // optimizer steps of stage 1 so far
  std::optional<int64_t> micro_batches;
  std::optional<double> seconds, loss, accuracy, lr, images_per_s;
  std::vector<step_stage> stages;
};

/// The `{"event":"summary"}` line that ends a finished run.
struct summary_line {
  std::optional<double> test_accuracy, wall_seconds, train_seconds, images_per_s;
  std::map<std::string, double> micro_batches;  // completed, replayed, restarts, ...
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

  /// 2(J−j)/k, by training's staleness_steps: the staleness in optimizer steps PETRA's schedule
  /// gives stage j (0 for backprop).
  double expected_staleness(int stage) const;
};

/// Reads `<dir>/config.yaml` and `<dir>/metrics.jsonl`. Throws report_input_error when the
/// directory, either file or any epoch line is missing, or a line is not a JSON object of the
/// documented shape (naming the file and the 1-based line).
run_data read_run(const std::string& dir);

}  // namespace petra::app
