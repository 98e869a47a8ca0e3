// A stage's record of its epoch for its stage_report: busy time (the epoch's and the phase's), the
// waits its timeline counted, its mailbox's peak and, under forward gradients, what came from
// downstream; reset when an epoch's report is taken, and carried over when the stage moves.
#pragma once

#include <chrono>
#include <cstdint>

#include "compute/pipeline/stage_report.hpp"
#include "training/stage_timeline.hpp"

namespace petra::training {

class stage_record {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// A phase starts at `now`: its busy time from zero; the epoch's record starts if none has.
  void begin_phase(time_point now);
  /// `seconds` spent computing, in the epoch and in the phase.
  void add_busy(double seconds) {
    busy_seconds_ += seconds;
    phase_busy_seconds_ += seconds;
  }
  /// `waiting` messages in the mailbox at once.
  void saw_mailbox(int64_t waiting) { mailbox_peak_ = waiting > mailbox_peak_ ? waiting : mailbox_peak_; }
  /// One message of `bytes` from downstream (forward gradients).
  void from_downstream(int64_t bytes) {
    ++upstream_messages_;
    upstream_bytes_ += bytes;
  }
  double phase_busy_seconds() const { return phase_busy_seconds_; }

  /// The record so far into `r` at `now` (an open wait of `timeline` counts up to now, and goes on).
  void fill(stage_report& r, stage_timeline& timeline, time_point now) const;
  /// A new epoch's record starts at `now`: every count and `timeline`'s waits from zero.
  void restart_epoch(stage_timeline& timeline, time_point now);
  /// Goes on from `earlier` (the record of the stage this one replaces, taken at a migration): its
  /// counts added, its peak kept, its epoch's start `earlier.wall_seconds` before `now`.
  void continue_from(const stage_report& earlier, stage_timeline& timeline, time_point now);

 private:
  double busy_seconds_ = 0;
  double phase_busy_seconds_ = 0;  // since the phase began (pipeline.rebalance compares the stages')
  int64_t mailbox_peak_ = 0;
  int64_t upstream_messages_ = 0, upstream_bytes_ = 0;
  time_point epoch_start_{};
};

}  // namespace petra::training
