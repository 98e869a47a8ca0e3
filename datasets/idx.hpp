// IDX files (the MNIST / Fashion-MNIST format): big-endian header, then uint8 data.
#pragma once

#include <string>

#include "datasets/dataset.hpp"

namespace petra::data {

/// Reads an IDX3 uint8 image file (magic 0x00000803, N×H×W) and an IDX1 uint8 label file
/// (magic 0x00000801, N), each plain or gzip (detected by magic bytes 1f 8b); one channel,
/// labels checked to lie in [0, num_classes).
dataset load_idx(const std::string& images_path, const std::string& labels_path, int num_classes);

/// The MNIST-layout split in `dir`: {train,t10k}-{images-idx3,labels-idx1}-ubyte, each tried as
/// `.gz` first, then plain; 10 classes. `kind` (mnist or fashion_mnist) names the dataset and
/// picks the install hint of the not-found error.
dataset load_mnist_like(const std::string& dir, bool train, dataset_kind kind = dataset_kind::mnist);

}  // namespace petra::data
