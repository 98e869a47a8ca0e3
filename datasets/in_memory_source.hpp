// An in-memory dataset (IDX, CIFAR-10, ImageNet32) served through image_source: make_batch, unchanged.
#pragma once

#include <memory>

#include "datasets/augment.hpp"
#include "datasets/dataset.hpp"
#include "datasets/image_source.hpp"

namespace petra::data {

/// A dataset held as uint8 N×C×H×W with its augmentation; fill_batch is exactly make_batch.
class in_memory_source : public image_source {
 public:
  /// Checks `augment` against the dataset's channels (check_augment_options).
  in_memory_source(std::shared_ptr<const dataset> data, augment_options augment);

  std::string name() const override { return data_->name; }
  int64_t count() const override { return data_->count; }
  int num_classes() const override { return data_->num_classes; }
  image_shape shape() const override { return {data_->channels, data_->height, data_->width}; }
  int32_t label(int64_t index) const override;

  /// The dataset itself.
  const dataset& data() const { return *data_; }

 private:
  void fill_checked(const int64_t* indices, int64_t count, bool train, uint64_t seed, int epoch,
                    int64_t first_position, float* images, int32_t* labels) const override;

  std::shared_ptr<const dataset> data_;
  augment_options augment_;
};

}  // namespace petra::data
