// Turning dataset images into normalised float batches, with stateless train-time augmentation.
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/dataset.hpp"

namespace petra::data {

/// Per-channel normalisation x ↦ (x/255 − mean_c) / std_c, and the train-time augmentation.
struct augment_options {
  std::vector<float> mean, std;  // one per channel, in [0,1] pixel units; both empty = x/255 only
  int crop_padding = 0;          // pad each side with p zero pixels, crop a random H×W window; 0 = off
  bool flip = false;             // mirror left-right with probability 1/2
};

/// Throws std::invalid_argument, naming the bad value, unless mean and std both hold `channels`
/// entries (or are both empty), every mean is finite, every std is finite and > 0, and crop_padding ≥ 0.
void check_augment_options(const augment_options& opt, int channels);

/// Fills `images` (count×C×H×W floats) and `labels` (count) for samples d[indices[0..count)).
/// Eval (train = false): images = normalise(x). Train: sample i, at position first_position + i of
/// epoch `epoch`, draws (dy, dx) ∈ [0, 2p]² and a flip bit from counter_rng(seed, augment, epoch,
/// position); its output is out[y][x] = normalise(padded[y + dy][x' + dx]) with x' = W−1−x when flipped
/// (else x), padded = x zero-padded by p on each side. No state is carried, so any batch of any epoch
/// can be rebuilt exactly (checkpoint resume, several processes) from (seed, epoch, positions).
void make_batch(const dataset& d, const int64_t* indices, int64_t count, const augment_options& opt,
                bool train, uint64_t seed, int epoch, int64_t first_position, float* images, int32_t* labels);

}  // namespace petra::data
