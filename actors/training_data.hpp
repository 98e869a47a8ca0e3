// The datasets a config names, loaded and checked, with their micro-batch feeds; and evaluation.
#pragma once

#include <memory>

#include "actors/data_feed.hpp"
#include "compute/pipeline/simulator.hpp"
#include "config/config.hpp"

namespace petra {

struct training_data {
  std::shared_ptr<const data::dataset> train;
  std::shared_ptr<const data::dataset> test;
  std::shared_ptr<data_feed> train_feed;
  std::shared_ptr<data_feed> test_feed;
};

/// Loads data.path per data.dataset (train_limit/test_limit applied) and checks it against the model input.
training_data load_training_data(const config::run_config& c);

struct eval_result {
  double loss = 0;
  double accuracy = 0;
  int64_t samples = 0;
};

/// Mean loss and accuracy over the whole feed, with running BN statistics.
eval_result evaluate(simulator& sim, data_feed& feed);

}  // namespace petra
