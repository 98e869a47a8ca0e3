// A stage's measurements over its most recent optimizer steps, for the per-step metric lines:
// the mean staleness and inversion error since the last look, from the stage's own record.
#pragma once

#include <cstdint>

#include "compute/pipeline/stage.hpp"

namespace petra {

/// What one stage measured over a window of its optimizer steps.
struct stage_window {
  int32_t stage = -1;           // 0-based
  int64_t optimizer_steps = 0;  // at the end of the window
  double staleness_mean = 0;    // optimizer steps between forward and backward, mean over the window
  double inversion_error_mean =
      -1;  // ‖x̃ − x‖/‖x‖ over the window's samples; −1 = none (not reversible, or none sampled)
  // The id of the micro-batch whose backward ended the window (stage 1's places the step lines in
  // the stream); −1 = not known.
  int64_t ended_by = -1;
};

/// Cuts a stage's statistics into windows: each take() covers what happened since the previous one.
class stage_window_meter {
 public:
  /// The window since the last take (or the last restart), ending now.
  stage_window take(const stage& s);
  /// The stage's statistics were reset (a new phase): the next window starts from zero.
  void restart() { last_ = totals{}; }

 private:
  struct totals {
    int64_t staleness_sum = 0, staleness_count = 0, inversion_samples = 0;
    double inversion_sum = 0;
  };
  totals last_;
};

}  // namespace petra
