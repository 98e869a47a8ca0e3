// The reference simulator: one thread advancing DESIGN.md §1's tick schedule over all
// stages exactly. It is the oracle the actor runtime is held to, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "compute/pipeline/stage.hpp"

namespace petra {

/// One micro-batch from the data: images (x1 only) and their labels.
struct micro_batch {
  int64_t id = 0;
  activation images;
  std::vector<int32_t> labels;
};

struct run_totals {
  int64_t micro_batches = 0;
  int64_t samples = 0;
  int64_t correct = 0;
  double loss_sum = 0.0;  // Σ over micro-batches of their mean loss
  int64_t ticks = 0;
  double mean_loss() const { return micro_batches ? loss_sum / micro_batches : 0.0; }
  double accuracy() const { return samples ? static_cast<double>(correct) / samples : 0.0; }
  run_totals& operator+=(const run_totals& other);
};

class simulator {
 public:
  /// `stages` in pipeline order, each computing on its own backend; `loss` computes the softmax
  /// cross-entropy of the last stage's logits (as the loss actor does); a micro-batch enters
  /// every `spacing` ticks (entry_spacing: 1, or 2J − 1 for backprop's one micro-batch in flight).
  simulator(std::vector<stage*> stages, backend& loss, int64_t spacing);

  /// Feeds micro-batches from `next` (false when exhausted) through the schedule until
  /// every one has finished its backward at stage 1 (the pipeline drains). `on_done`
  /// is called after each completed micro-batch. Each stage records its own delays and staleness.
  run_totals run(const std::function<bool(micro_batch&)>& next,
                 const std::function<void(const run_totals&)>& on_done = {});

  /// Evaluation forward of one micro-batch through every stage: (mean loss, correct).
  std::pair<double, int64_t> evaluate(const micro_batch& mb);

  /// Ticks run so far, over every call of run.
  int64_t ticks() const { return tick_; }

 private:
  std::vector<stage*> stages_;
  backend& loss_;
  int64_t spacing_;
  int64_t tick_ = 0;
};

}  // namespace petra
