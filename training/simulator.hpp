// The reference simulator: one thread advancing docs/design.md §1's tick schedule over all
// stages exactly. It is the oracle the actor runtime is held to, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "compute/pipeline/stage.hpp"
#include "training/loss_ledger.hpp"

namespace petra {

struct pipeline_cut;
class forward_gradient;

/// `a`, made by `from`, as `to` receives it (docs/design.md §5: the one hand-over of a message).
activation hand_over(const activation& a, backend& from, backend& to);

/// One micro-batch from the data: images (x1 only) and their labels.
struct micro_batch {
  int64_t id = 0;
  activation images;
  std::vector<int32_t> labels;
};

/// A batch of the evaluation wave that follows an epoch's last training micro-batch into the
/// pipeline: it flows forward beside training, each stage evaluating it (running BN statistics)
/// with the weights it has when the batch reaches it.
struct eval_item {
  int32_t epoch = 0;
  int64_t index = -1;  // its place in the wave
  activation images;
  std::vector<int32_t> labels;
};

/// What enters stage 1 at one tick; either may be absent.
struct tick_input {
  bool has_train = false;
  micro_batch train;
  bool has_eval = false;
  eval_item eval;
};

/// The simulator's view of a run: what enters each tick, and what it tells back.
struct simulator_hooks {
  /// What enters at `tick` (counted from this run's start); false once nothing more will enter.
  std::function<bool(int64_t tick, tick_input& in)> next;
  /// A micro-batch finished its backward at stage 1 (forward gradients: at every stage; the run's
  /// totals so far).
  std::function<void(const run_totals&)> on_done;
  /// Micro-batch `id` was scored at the loss: its mean loss, correct predictions and samples.
  std::function<void(int64_t id, double mean_loss, int64_t correct, int64_t samples)> on_loss;
  /// Stage `j` finished the backward of micro-batch `id` (its record now includes it).
  std::function<void(std::size_t j, int64_t id)> on_backward;
  /// An evaluation batch reached the loss: its mean loss and correct predictions.
  std::function<void(const eval_item& item, double mean_loss, int64_t correct)> on_eval;
  /// Whether to take a consistent cut before tick `tick` (nothing of it has run yet).
  std::function<bool(int64_t tick)> cut_at;
  /// The cut taken before a tick cut_at chose.
  std::function<void(pipeline_cut& cut)> on_cut;
};

class simulator {
 public:
  /// `stages` in pipeline order, each computing on its own backend; `loss` computes the softmax
  /// cross-entropy of the last stage's logits (as the loss actor does); a micro-batch enters
  /// every `spacing` ticks (entry_spacing: 1, or 2J − 1 for backprop's one micro-batch in flight).
  /// `backward_first` (training.tick_order): within a tick each stage but the last runs its
  /// backward (and any optimizer step) before its forward, so the forward sees that step.
  simulator(std::vector<stage*> stages, backend& loss, int64_t spacing, bool backward_first = false);

  /// Feeds micro-batches from `next` (false when exhausted), one every `spacing` ticks, through
  /// the schedule until every one has finished its backward at stage 1 (the pipeline drains).
  /// `on_done` is called after each completed micro-batch.
  run_totals run(const std::function<bool(micro_batch&)>& next,
                 const std::function<void(const run_totals&)>& on_done = {});

  /// The same schedule with the inputs `hooks.next` chooses per tick, evaluation waves
  /// included: per tick each stage evaluates its evaluation batch (with the weights the tick
  /// starts with), then runs its forward, then its backward (backward_first: the other way round). Runs until
  /// nothing more enters and everything in flight is done. Ticks count from the run's start; with `from`, the
  /// run resumes a cut taken by an earlier run of the same phase: every stage is restored from its part, and
  /// the first tick is the cut's (hooks.next sees the ticks from there on).
  run_totals run(const simulator_hooks& hooks, const pipeline_cut* from = nullptr);

  /// Evaluation forward of one micro-batch through every stage: (mean loss, correct).
  std::pair<double, int64_t> evaluate(const micro_batch& mb);
  /// One micro-batch through every stage's calibrate (stage::calibrate; no loss).
  void calibrate(const micro_batch& mb);

  /// Ticks run so far, over every call of run.
  int64_t ticks() const { return tick_; }

  /// Seconds stage j (0-based) spent computing so far, over every call of run: its evaluation,
  /// forward and backward of each tick, hand-overs included (what rebalancing compares).
  double busy_seconds(std::size_t j) const { return busy_.at(j); }

  /// Trains by forward gradients (training/forward_gradient.hpp): `fg` runs each stage's forward and,
  /// when its derivatives have come back, its backward; only the last stage's backward is the plain
  /// one. Such a run takes no cuts and resumes none.
  void use_forward_gradient(forward_gradient* fg) { fg_ = fg; }

 private:
  std::vector<stage*> stages_;
  backend& loss_;
  int64_t spacing_;
  bool backward_first_;
  int64_t tick_ = 0;
  std::vector<double> busy_;  // per stage
  forward_gradient* fg_ = nullptr;
};

}  // namespace petra
