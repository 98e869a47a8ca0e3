// CIFAR-10 binary version: records of one label byte then 3×32×32 pixel bytes (R, G, B planes).
#pragma once

#include <string>

#include "datasets/dataset.hpp"

namespace petra::data {

/// The train split (data_batch_1..5.bin) or test split (test_batch.bin) from `dir`, or from
/// `dir`/cifar-10-batches-bin when that is where the archive was unpacked; 3×32×32, 10 classes.
/// Files may be gzipped whatever their names (detected by magic bytes 1f 8b).
dataset load_cifar10(const std::string& dir, bool train);

}  // namespace petra::data
