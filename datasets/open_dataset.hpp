// The entry point that opens any dataset kind by name as an image_source: in memory for IDX,
// CIFAR-10 and ImageNet32, file-backed for ImageNet folders.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/image_source.hpp"

namespace petra::data {

/// What to open and how to transform it; mirrors the data.* keys of a run config.
struct dataset_spec {
  dataset_kind kind = dataset_kind::fashion_mnist;
  std::string path;              // the directory holding the files
  std::vector<float> mean, std;  // per channel, in [0, 1] pixel units
  int crop_padding = 0;          // in-memory kinds: random crop after zero padding; 0 = off
  bool flip = false;             // random horizontal flip (train)
  int crop_size = 224;           // imagenet: output side (random-resized-crop / center crop)
  int resize_size = 256;         // imagenet eval: shorter side before the center crop
  bad_image_policy on_bad_image = bad_image_policy::skip;  // imagenet: unreadable files
  int64_t limit = 0;  // > 0: only that many samples (in memory: the first; imagenet: evenly spread)
};

/// Opens the train split (train = true) or the test split (val for the ImageNet kinds) of
/// spec.kind. Bad options are std::invalid_argument; missing or bad files a
/// dataset_error naming the path.
std::shared_ptr<const image_source> open_dataset(const dataset_spec& spec, bool train);

}  // namespace petra::data
