// The one loss ledger: what every runtime's loss side keeps of the batches it scores (the phase's
// training totals, each open epoch's tally, each open evaluation wave's sums), and what an
// evaluation amounts to. The simulator's driver and the loss actor keep it alike, a cut saves it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "training/json_record.hpp"

namespace petra {

/// Scored training micro-batches summed (and, for a simulator's phase, the ticks it ran).
struct run_totals {
  int64_t micro_batches = 0;
  int64_t samples = 0;
  int64_t correct = 0;
  double loss_sum = 0.0;  // Σ over micro-batches of their mean loss
  int64_t ticks = 0;
  /// Σ mean loss / micro-batches: the mean of the micro-batches' mean losses.
  double mean_loss() const { return micro_batches ? loss_sum / micro_batches : 0.0; }
  double accuracy() const { return samples ? static_cast<double>(correct) / samples : 0.0; }
  run_totals& operator+=(const run_totals& other);
  /// What was added since `earlier`, an earlier look at the same totals (a window's figures).
  run_totals since(const run_totals& earlier) const;
  /// One more scored micro-batch.
  void add(double batch_mean_loss, int64_t batch_correct, int64_t batch_samples);
};

template <class Fields>
void describe(Fields& f, run_totals& t) {
  f("micro_batches", t.micro_batches);
  f("samples", t.samples);
  f("correct", t.correct);
  f("loss_sum", t.loss_sum);
  f("ticks", t.ticks);
}

/// An evaluation's figures.
struct eval_result {
  double loss = 0;  // mean over samples
  double accuracy = 0;
  int64_t samples = 0;
};

/// Scored evaluation batches summed; an evaluation weighs every sample alike.
struct eval_sums {
  double loss_sum = 0;  // Σ over samples of their loss (a batch adds its mean loss × its samples)
  int64_t correct = 0;
  int64_t samples = 0;
  int64_t batches = 0;
  void add(double batch_mean_loss, int64_t batch_correct, int64_t batch_samples);
  /// Another part of the same evaluation, already summed.
  eval_sums& operator+=(const eval_sums& other);
  /// loss_sum / samples and correct / samples (0 when nothing was scored).
  eval_result result() const;
};

template <class Fields>
void describe(Fields& f, eval_sums& s) {
  f("loss_sum", s.loss_sum);
  f("correct", s.correct);
  f("samples", s.samples);
  f("batches", s.batches);
}

namespace training {

/// The loss side's record of a phase. Training micro-batch ids count from epoch 1's first at
/// per_epoch (so id / per_epoch is its epoch); an epoch's tally is complete with its last
/// micro-batch, a wave's with its wave_size-th batch: both are then handed back and closed.
struct loss_ledger {
  struct epoch_tally {
    int32_t epoch = 0;
    run_totals totals;
  };
  struct wave_tally {
    int32_t epoch = 0;
    eval_sums sums;
  };
  run_totals totals;                // the phase's training micro-batches scored so far
  std::vector<epoch_tally> epochs;  // open epochs: their micro-batches scored so far
  std::vector<wave_tally> waves;    // open evaluation waves: their batches scored so far
  int64_t eval_scored = 0;          // evaluation batches scored in the phase
  int32_t closed_epoch = 0;         // the latest epoch whose tally was handed back: a re-issued
                                    // micro-batch of it scored after its last counts in `totals` only

  /// Training micro-batch `id` scored, with `per_epoch` micro-batches an epoch (0: no epoch
  /// tallies): its epoch's tally when `id` ends the epoch. (A micro-batch lost in a stage-local
  /// recovery and re-issued may come after its epoch's last: its epoch's tally went without it.)
  std::optional<epoch_tally> score_train(int64_t id, int64_t per_epoch, double mean_loss, int64_t correct,
                                         int64_t samples);
  /// A batch of epoch `epoch`'s evaluation wave of `wave_size` batches: the wave's sums when it
  /// was the last.
  std::optional<eval_sums> score_eval(int32_t epoch, int64_t wave_size, double mean_loss, int64_t correct,
                                      int64_t samples);
  /// The phase's totals; the next phase's start from 0 (open epochs and waves carry on).
  run_totals end_phase();
};

template <class Fields>
void describe(Fields& f, loss_ledger::epoch_tally& e) {
  f("epoch", e.epoch);
  f("totals", e.totals);
}

template <class Fields>
void describe(Fields& f, loss_ledger::wave_tally& w) {
  f("epoch", w.epoch);
  f("sums", w.sums);
}

/// The ledger's fields, for a record that holds one (a cut's parts).
template <class Fields>
void describe(Fields& f, loss_ledger& l) {
  f("totals", l.totals);
  f("epochs", l.epochs);
  f("waves", l.waves);
  f("eval_scored", l.eval_scored);
  f("closed_epoch", l.closed_epoch, json_record::presence::optional);
}

}  // namespace training
}  // namespace petra
