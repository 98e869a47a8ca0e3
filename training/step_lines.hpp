// The per-step lines of metrics.jsonl (output.metrics_every_steps): loss, accuracy, learning rate
// and images/s over the last N optimizer steps of stage 1, and each stage's latest window.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "compute/optimizer.hpp"
#include "training/run_dir.hpp"
#include "training/simulator.hpp"
#include "training/stage_window.hpp"

namespace petra {

class step_lines {
 public:
  /// One line every `every` optimizer steps of stage 1 (0 = never), into `dir`. A resumed run
  /// passes the last step line `dir` has (its step and seconds): the steps it runs again
  /// are not logged twice, its first line's window starts where it resumed, and its seconds count
  /// on from the earlier process's.
  step_lines(int every, const optimizer_settings& optimizer, run_dir& dir, run_dir::logged_step logged = {});

  /// Where the run stands: the stream's `position` (micro-batches of the run that reached the
  /// loss, counted from epoch 1's first) in `epoch`, the totals since this process started and
  /// each stage's latest window. Writes a line when stage 1's window reached the next multiple of
  /// `every` steps.
  void observe(int epoch, int64_t position, const run_totals& run_so_far,
               const std::vector<stage_window>& stages);

 private:
  int every_;
  optimizer_settings optimizer_;
  run_dir& dir_;
  int64_t next_ = 0;
  run_totals last_;
  bool rebase_ = false;  // resumed: the first observation is the window's start
  double seconds_before_ = 0;
  std::chrono::steady_clock::time_point start_, last_time_;
};

}  // namespace petra
