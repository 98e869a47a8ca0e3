// What enters stage 1, tick by tick: the training micro-batches of a phase (crossing epoch ends),
// one every `spacing` ticks, and after each epoch's last one, when evaluation waves are on, that
// epoch's wave — the test set in micro-batches, one per tick beside training. The simulator's
// driver and the loader actor both follow it, so lockstep and simulate see the same ticks.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "training/data_feed.hpp"
#include "training/simulator.hpp"

namespace petra {

class input_schedule {
 public:
  /// `test` (may be null: no waves) feeds the waves in order, one micro-batch per item.
  input_schedule(data_feed& train, data_feed* test, int64_t spacing);

  /// A phase: `count` training micro-batches from micro-batch `position` of `epoch` on.
  void start(int epoch, int64_t position, int64_t count);

  /// What tick `tick` (of this phase) carries; false once nothing more will enter.
  bool next(int64_t tick, tick_input& in);

  /// The training micro-batches `ids` (of this schedule's feed, ascending) made again, as they were
  /// first (same images, same augmentation: both follow from epoch and position); the schedule then
  /// goes on where it stood. Stage-local recovery re-issues with it what was lost in flight.
  std::vector<micro_batch> reload(const std::vector<int64_t>& ids);

  /// Right after start(): walks ticks 0 .. tick−1 without loading anything, so that next(tick) is
  /// what it would have been (a phase resumed from a cut taken before `tick`).
  void skip_to(int64_t tick);

  /// What a phase needs, known before it runs: the ticks of a pipeline of `stages` stages until
  /// everything that entered is done (training back at stage 1, evaluation at the loss), and the
  /// evaluation batches it carries. The phase: `count` micro-batches from `position` of an epoch
  /// of `per_epoch`, one every `spacing` ticks, waves of `wave_size` batches (0 = none).
  struct shape {
    int64_t ticks = 0;
    int64_t eval_items = 0;
  };
  static shape plan(int64_t per_epoch, int64_t wave_size, int64_t spacing, int64_t position, int64_t count,
                    std::size_t stages);

  /// Batches per evaluation wave (0 without waves).
  int64_t wave_size() const { return test_ ? test_->micro_batches_per_epoch() : 0; }

 private:
  data_feed& train_;
  data_feed* test_;
  int64_t spacing_;
  int64_t per_epoch_;
  int epoch_ = 1;
  int64_t position_ = 0;
  int64_t count_ = 0, fed_ = 0;
  uint64_t train_ticket_ = 0, test_ticket_ = 0;  // of this schedule's start_epoch calls
  std::deque<int> waves_;                        // epochs whose wave has not (fully) entered, oldest first
  bool wave_open_ = false;
  int64_t wave_from_tick_ = 0;  // the tick the oldest pending wave may start at
  int64_t wave_index_ = 0;      // batches of the open wave entered so far

  /// One tick of the walk; loads into `in` unless it is null.
  bool step(int64_t tick, tick_input* in);
};

}  // namespace petra
