// The datasets a config names, loaded and checked, with their micro-batch feeds.
#pragma once

#include <memory>

#include "config/config.hpp"
#include "training/data_feed.hpp"

namespace petra {

struct training_data {
  std::shared_ptr<const data::dataset> train;
  std::shared_ptr<const data::dataset> test;
  std::shared_ptr<data_feed> train_feed;
  std::shared_ptr<data_feed> test_feed;
  std::shared_ptr<data_feed> wave_feed;  // the test set in training-sized micro-batches (evaluation waves)
};

/// Loads data.path per data.dataset (train_limit/test_limit applied) and checks it against the model input.
training_data load_training_data(const config::run_config& c);

}  // namespace petra
