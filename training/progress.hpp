// Progress reporting: a rewritten line on a terminal, plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "training/simulator.hpp"

namespace petra {

/// The line follows the data stream: it names the epoch the last micro-batch that reached the
/// loss belongs to, not the epoch whose evaluation is pending (without a drain the next epoch's
/// micro-batches are already flowing while the last one's evaluation batches cross the stages).
class progress {
 public:
  /// `enabled` false prints nothing; on a non-terminal, one line per ~10% of an epoch. `out` and
  /// `terminal` are for tests (default: stdout, and whether it is a terminal).
  explicit progress(bool enabled, std::FILE* out = nullptr, int terminal = -1);

  /// A phase of a run of `epochs` epochs of `per_epoch` micro-batches begins `phase_start`
  /// micro-batches into the run (counted from epoch 1's first). `resumed`: the phase continues
  /// from a snapshot, so its totals do not start at 0 and its first update only sets the base.
  void begin_phase(int epochs, int64_t per_epoch, int64_t phase_start, bool resumed = false);
  /// The phase's training totals so far: the stream stands at phase_start +
  /// totals.micro_batches. Loss, accuracy and images/s are over the micro-batches since the
  /// line began (when an epoch starts between two updates, the line begins at the earlier one,
  /// so its first figures can include up to one update's worth of the previous epoch).
  void update(const run_totals& phase_totals);
  /// On a terminal, ends the line being rewritten (before other output); the next update draws
  /// a fresh one.
  void break_line();

 private:
  using clock = std::chrono::steady_clock;
  void start_line(int epoch, int64_t first, const run_totals& base, clock::time_point since);
  void draw(int64_t done, const run_totals& totals, clock::time_point now);

  bool enabled_;
  std::FILE* out_;
  bool terminal_;
  int epochs_ = 0;
  int64_t per_epoch_ = 0, phase_start_ = 0;
  int epoch_ = 0;              // the line's epoch (0: none yet)
  int64_t first_ = 0;          // micro-batches of the epoch done when the line began
  run_totals base_;            // the phase's totals when the line began
  int64_t last_printed_ = -1;  // non-terminal: the last decile printed
  bool drawn_ = false;         // terminal: a partial line is on screen
  bool resumed_ = false;       // the phase's first update only sets the base
  run_totals prev_;            // the previous update's totals, and when it came
  clock::time_point start_, last_draw_, prev_time_;
};

/// The epoch (1-based) of the stream's last micro-batch when `position` micro-batches of the run
/// (counted from epoch 1's first) have gone by: position per_epoch is still epoch 1's end.
inline int epoch_at(int64_t position, int64_t per_epoch) {
  return static_cast<int>((position > 0 ? position - 1 : 0) / per_epoch + 1);
}

/// "1h02m", "3m12s", "45s".
std::string format_duration(double seconds);

}  // namespace petra
