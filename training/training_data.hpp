// The datasets a config names, opened and checked, with their micro-batch feeds; the bad images
// they met, for the run's log.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.hpp"
#include "training/data_feed.hpp"

namespace petra {

struct training_data {
  std::shared_ptr<const data::image_source> train;
  std::shared_ptr<const data::image_source> test;
  std::shared_ptr<data_feed> train_feed;
  std::shared_ptr<data_feed> test_feed;
  std::shared_ptr<data_feed> wave_feed;  // the test set in training-sized micro-batches (evaluation waves)
  // training.bn_recalibration > 0: the training set in order, unaugmented, in training-sized micro-batches
  std::shared_ptr<data_feed> calibration_feed;

  /// The bad images met since the last call (train split first), each returned once.
  std::vector<data::bad_image> new_bad_images();
  /// Bad images met so far, both splits.
  int64_t bad_image_count() const;

 private:
  int64_t logged_train_ = 0, logged_test_ = 0;
};

/// Samples per evaluation micro-batch: 500 for the in-memory kinds; for imagenet the training
/// micro-batch (a 500-image batch of 224² is 301 MB, and the stages are sized for micro_batch).
int eval_micro_batch(const config::run_config& c);

/// Opens data.path per data.dataset (train_limit/test_limit applied) and checks it against the model
/// input; the feeds fill micro-batches on data.workers threads, in pinned memory when stage 1 runs
/// on a GPU of this process. Throws std::invalid_argument or data::dataset_error naming the problem.
training_data load_training_data(const config::run_config& c);

}  // namespace petra
