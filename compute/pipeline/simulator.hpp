// The reference simulator: one thread advancing DESIGN.md §1's tick schedule over all
// stages exactly. It is the oracle the actor runtime is held to, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "compute/pipeline/method.hpp"
#include "compute/pipeline/stage.hpp"

namespace petra {

/// One micro-batch from the data: images (x1 only) and their labels.
struct micro_batch {
  int64_t id = 0;
  activation images;
  std::vector<int32_t> labels;
};

/// What was measured per stage from the stamps of each micro-batch.
struct stage_timing {
  std::map<int64_t, int64_t> delay_ticks;     // fwd→bwd delay in ticks → count
  std::map<int64_t, int64_t> staleness;       // optimizer steps between fwd and bwd → count
};

struct run_totals {
  int64_t micro_batches = 0;
  int64_t samples = 0;
  int64_t correct = 0;
  double loss_sum = 0.0;   // Σ over micro-batches of their mean loss
  int64_t ticks = 0;
  double mean_loss() const { return micro_batches ? loss_sum / micro_batches : 0.0; }
  double accuracy() const { return samples ? static_cast<double>(correct) / samples : 0.0; }
};

class simulator {
 public:
  simulator(std::vector<std::unique_ptr<stage>>& stages, backend& be, method_options method);

  /// Feeds micro-batches from `next` (false when exhausted) through the schedule until
  /// every one has finished its backward at stage 1 (the pipeline drains). `on_done`
  /// is called after each completed micro-batch.
  run_totals run(const std::function<bool(micro_batch&)>& next,
                 const std::function<void(const run_totals&)>& on_done = {});

  /// Evaluation forward of one micro-batch through every stage: (mean loss, correct).
  std::pair<double, int64_t> evaluate(const micro_batch& mb);

  const std::vector<stage_timing>& timings() const { return timings_; }
  void reset_timings() { timings_.assign(stages_.size(), stage_timing{}); }
  int64_t ticks() const { return tick_; }

 private:
  run_totals run_backprop(const std::function<bool(micro_batch&)>& next,
                          const std::function<void(const run_totals&)>& on_done);
  run_totals run_pipelined(const std::function<bool(micro_batch&)>& next,
                           const std::function<void(const run_totals&)>& on_done);
  void stamp(std::size_t j, int64_t forward_tick, int64_t forward_version);

  std::vector<std::unique_ptr<stage>>& stages_;
  backend& be_;
  method_options method_;
  std::vector<stage_timing> timings_;
  std::vector<std::map<int64_t, int64_t>> forward_tick_;  // per stage: id → tick of its forward
  int64_t tick_ = 0;
};

}  // namespace petra
