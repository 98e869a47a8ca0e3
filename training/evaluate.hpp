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

}  // namespace petra
