// Adaptive fallback: when a reversible stage's rebuilds drift, it keeps its inputs instead, until
// the rebuilds, still sampled, are accurate again. The decision rests on the stage's own samples only.
#pragma once

#include <cstddef>
#include <vector>

namespace petra {

/// What the policy remembers: its mode and the samples of the window it is filling.
struct fallback_state {
  bool keeping = false;        // forwards keep their inputs (the exact-input path)
  std::vector<double> window;  // the errors sampled since the last switch, at most fallback_policy::window
};

/// Hysteresis on the moving mean m of the last `window` sampled inversion errors ‖x̃ − x‖/‖x‖:
/// rebuilding, m > max_error switches to keeping inputs; keeping, m < max_error/2 switches back.
/// The window restarts empty at each switch, so each decision rests on `window` samples of the mode
/// it leaves (a sample whose forward was taken before the switch counts too: it measures the same
/// rebuild with the same current weights). An error that is not a number counts as too large.
class fallback_policy {
 public:
  /// Samples per decision: 8 on 1 in runtime.inversion_sample_every micro-batches.
  static constexpr std::size_t window = 8;

  /// `max_error` 0 turns the policy off: it never keeps.
  explicit fallback_policy(double max_error = 0);

  bool enabled() const { return max_error_ > 0; }
  bool keeping() const { return state_.keeping; }
  /// Adds one sampled error; returns true when the mode switched.
  bool observe(double error);

  const fallback_state& state() const { return state_; }
  /// Restores a state of export (a snapshot); throws std::invalid_argument for a window too long.
  void restore(const fallback_state& state);

 private:
  double max_error_;
  fallback_state state_;
};

}  // namespace petra
