// Downsampled ImageNet 32×32 (Chrabaszcz et al. 2017) as distributed: train_data_batch_1..10 and
// val_data, each a pickled dict {'data': uint8 N×3072 (R, G, B planes), 'labels': [1..1000],
// 'mean': float64 3072 (train only)} written by numpy under Python 3 (pickle protocol 3 by default).
#pragma once

#include <string>

#include "datasets/dataset.hpp"

namespace petra::data {

/// Reads one pickled batch. Accepted: protocols 2 to 5; the array as numpy pickles it
/// (numpy.core.multiarray._reconstruct + BUILD state, numpy 2's numpy._core, or protocol 5's
/// _frombuffer); keys as text or bytes; labels a list of ints in [1, 1000] (or a 1-D integer array).
/// Anything else is a dataset_error naming `path` and what was found.
/// The result holds that one file (name = `path`).
dataset read_imagenet32_batch(const std::string& path);

/// The train split (train_data_batch_1..10, all ten required) or val split (val_data) from `dir`,
/// or from `dir`/Imagenet32_train, `dir`/Imagenet32_val where the zips unpack; 3×32×32, 1000 classes.
dataset load_imagenet32(const std::string& dir, bool train);

}  // namespace petra::data
