// Turns an image source into micro-batches through the decoding loader (data.workers threads fill
// them ahead): the seeded epoch order, augmentation, and for training the last incomplete optimizer
// batch dropped (so every step averages exactly k micro-batches).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "compute/backend_factory.hpp"
#include "datasets/datasets.hpp"
#include "training/simulator.hpp"

namespace petra {

/// How a data_feed cuts its source and who fills the batches.
struct feed_options {
  bool train = true;     // shuffled, augmented, truncated to a multiple of micro_batch·k; else in order, all
  int micro_batch = 64;  // samples per micro-batch
  int accumulation = 1;  // k: training drops the last incomplete optimizer batch
  uint64_t seed = 0;     // the epoch order and augmentation derive from (seed, epoch, position)
  int workers = 1;       // decoding threads; 0 = fill on the consumer's thread inside next()
  host_tensor_maker images;  // memory of each micro-batch's images; empty = plain host memory
};

/// The micro-batches of one split, made ahead by a batch_loader's workers, served to one consumer
/// at a time (the ticket of start_epoch tells a stale one apart).
class data_feed {
 public:
  /// Starts the workers; std::invalid_argument when training gets less than one optimizer batch.
  data_feed(std::shared_ptr<const data::image_source> source, feed_options options);

  /// Training: ⌊count / (micro_batch·k)⌋·k; evaluation: ⌈count / micro_batch⌉.
  int64_t micro_batches_per_epoch() const { return loader_.micro_batches_per_epoch(); }
  /// Starts epoch `epoch` (1-based) at micro-batch `position` (a resume point). Continuing where the
  /// feed stands keeps the micro-batches already made ahead (they depend only on epoch and position).
  /// Returns this start's ticket: next() with an older ticket serves nothing.
  uint64_t start_epoch(int epoch, int64_t position = 0);
  /// The next micro-batch of the epoch, images on the host; false at the epoch's end. A bad image
  /// under data.on_bad_image: fail is a data::dataset_error naming the file.
  bool next(micro_batch& out);
  /// next() for the holder of `ticket`: false, serving nothing, once another start_epoch came after
  /// it (a torn-down loader actor finishing its last handler must not take the next one's batches).
  bool next(micro_batch& out, uint64_t ticket);
  /// Micro-batches served so far in the current epoch.
  int64_t position() const { return position_; }
  /// Seconds next() waited for a micro-batch not ready yet, since construction: the time the
  /// loader was the bottleneck.
  double waited_seconds() const { return loader_.stats().waited_seconds; }
  const data::image_source& source() const { return *source_; }

 private:
  std::shared_ptr<const data::image_source> source_;
  data::batch_loader loader_;
  std::mutex mutex_;      // start_epoch and next: one holder of the current ticket at a time
  uint64_t ticket_ = 0;   // of the last start_epoch; 0 = none yet
  bool in_step_ = false;  // the loader stands at (epoch_, position_)
  int epoch_ = 0;
  int64_t position_ = 0;  // micro-batches served this epoch
  int64_t next_id_ = 0;   // ids unique over the run
};

}  // namespace petra
