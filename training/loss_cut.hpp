// The loss side's part of a consistent cut (the actor runtimes): the labels it holds, the totals
// so far and each open epoch's partial sums, as JSON and back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/simulator.hpp"

namespace petra::training {

struct loss_cut {
  struct labels_entry {
    int32_t eval_epoch = -1;  // -1: a training micro-batch's
    int64_t id = -1;          // the micro-batch, or the place in the wave
    std::vector<int32_t> labels;
  };
  struct epoch_entry {
    int32_t epoch = 0;
    run_totals totals;
  };
  struct wave_entry {
    int32_t epoch = 0;
    double loss_sum = 0;
    int64_t correct = 0, samples = 0, items = 0;
  };
  std::vector<labels_entry> labels;
  int64_t waiting = 0;  // logits whose labels had not come: the cut is not usable
  run_totals totals;    // the phase's so far
  std::vector<epoch_entry> epochs;
  std::vector<wave_entry> waves;
  int64_t eval_scored = 0;  // evaluation batches scored in the phase (async: their credits went back)
};

std::string encode(const loss_cut& part);
/// Throws std::runtime_error saying what is missing.
loss_cut decode_loss_cut(const std::string& json);

}  // namespace petra::training
