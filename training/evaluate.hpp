// The one evaluation loop: a feed's micro-batches through the model in eval mode (running BN
// statistics), whatever runtime carries them.
#pragma once

#include <cstdint>
#include <functional>

#include "training/data_feed.hpp"
#include "training/loss_ledger.hpp"
#include "training/simulator.hpp"

namespace petra {

/// One micro-batch's evaluation: its mean loss and the number of correct predictions.
struct eval_score {
  double mean_loss = 0;
  int64_t correct = 0;
};

/// Mean loss and accuracy over the whole feed; `score` evaluates one micro-batch.
eval_result evaluate(data_feed& feed, const std::function<eval_score(const micro_batch&)>& score);

/// The feed's first `micro_batches` (all of them when it has fewer), each through `calibrate`: the
/// one loop of a recalibration of the running BN statistics, whatever runtime carries it.
void calibrate(data_feed& feed, int64_t micro_batches,
               const std::function<void(const micro_batch&)>& calibrate);

}  // namespace petra
