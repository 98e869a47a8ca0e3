// Turns a dataset into micro-batches: the seeded epoch order, augmentation, and the
// last incomplete optimizer batch dropped (so every step averages exactly k micro-batches).
#pragma once

#include <cstdint>
#include <memory>

#include "compute/pipeline/simulator.hpp"
#include "datasets/datasets.hpp"

namespace petra {

class data_feed {
 public:
  /// train: shuffled and augmented, truncated to a multiple of micro_batch·k; eval: in order, all of it.
  data_feed(std::shared_ptr<const data::dataset> d, const data::augment_options& augment, bool train,
            int micro_batch, int accumulation, uint64_t seed);

  int64_t micro_batches_per_epoch() const { return micro_batches_; }
  /// Starts epoch `epoch` (1-based) at micro-batch `position` (a resume point).
  void start_epoch(int epoch, int64_t position = 0);
  /// The next micro-batch of the epoch, images on the host; false at the epoch's end.
  bool next(micro_batch& out);
  int64_t position() const { return position_; }

 private:
  std::shared_ptr<const data::dataset> data_;
  data::augment_options augment_;
  bool train_;
  int micro_batch_;
  uint64_t seed_;
  int64_t micro_batches_;
  int epoch_ = 0;
  int64_t position_ = 0;  // micro-batches served this epoch
  int64_t next_id_ = 0;   // ids unique over the run
  std::vector<int64_t> order_;
};

}  // namespace petra
