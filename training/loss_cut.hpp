// The loss side's part of a consistent cut (the actor runtimes): its ledger as it stood and the
// labels it held, as JSON and back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/loss_ledger.hpp"

namespace petra::training {

/// The ledger at the cut (its totals, open epochs and waves, evaluation batches scored: async's
/// credits that went back), and what the loss side held besides.
struct loss_cut : loss_ledger {
  struct labels_entry {
    int32_t eval_epoch = -1;  // -1: a training micro-batch's
    int64_t id = -1;          // the micro-batch, or the place in the wave
    std::vector<int32_t> labels;
  };
  std::vector<labels_entry> labels;
  int64_t waiting = 0;  // logits whose labels had not come: the cut is not usable
};

template <class Fields>
void describe(Fields& f, loss_cut::labels_entry& l) {
  f("eval_epoch", l.eval_epoch);
  f("id", l.id);
  f("labels", l.labels);
}

template <class Fields>
void describe(Fields& f, loss_cut& part) {
  describe(f, static_cast<loss_ledger&>(part));
  f("labels", part.labels);
  f("waiting", part.waiting);
}

std::string encode(const loss_cut& part);
/// Throws std::runtime_error saying what is missing.
loss_cut decode_loss_cut(const std::string& json);

}  // namespace petra::training
