// The decoding loader: worker threads fill micro-batches ahead of the consumer into a bounded ring,
// handed out strictly in epoch order; the bytes of every batch are the same whatever the number of
// workers, since each depends only on (data, seed, epoch, positions).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "datasets/image_source.hpp"

namespace petra::data {

/// Memory for one micro-batch's images: `data` holds count·C·H·W floats and stays valid while
/// `owner` lives (a tensor's storage, pinned host memory, a vector: the loader does not know).
struct image_buffer {
  float* data = nullptr;
  std::shared_ptr<void> owner;
};

/// Gives memory for `count` images of `shape`. Called on worker threads, several at once: it must
/// be thread-safe. A null `data` or an exception fails that batch (rethrown by next()).
using image_allocator = std::function<image_buffer(int64_t count, const image_shape& shape)>;

/// The default allocator: a std::vector<float> owned by the buffer.
image_buffer host_image_buffer(int64_t count, const image_shape& shape);

/// How a batch_loader cuts an epoch into micro-batches and how many threads fill them.
struct loader_options {
  int micro_batch = 64;       // samples per micro-batch
  int64_t micro_batches = 0;  // served per epoch; 0 = ⌈count / micro_batch⌉ (the last may be short)
  bool train = true;          // order epoch_order(count, seed, epoch) and the train transform; else
                              // dataset order and the eval transform
  uint64_t seed = 0;
  int workers = 1;   // decoding threads; 0 = fill on the caller's thread inside next()
  int prefetch = 0;  // ready or in-progress micro-batches at most; 0 = 2·max(workers, 1)
};

/// One micro-batch, ready: micro-batch `position` of epoch `epoch`, samples at epoch positions
/// [position·micro_batch, position·micro_batch + count).
struct loaded_batch {
  int epoch = 0;
  int64_t position = 0;
  int64_t count = 0;
  image_buffer images;          // count × C×H×W, normalised
  std::vector<int32_t> labels;  // count
};

/// How much the consumer waited: waited_seconds is the time next() spent blocked on a batch that was
/// not ready yet, i.e. the time the loader was the bottleneck.
struct loader_stats {
  double waited_seconds = 0;
  int64_t waits = 0;   // calls of next() that blocked
  int64_t served = 0;  // batches handed out
};

/// Serves the micro-batches of an image_source epoch by epoch. One consumer thread calls
/// start_epoch / next; the workers run from construction to destruction (joined there).
class batch_loader {
 public:
  batch_loader(std::shared_ptr<const image_source> source, loader_options options,
               image_allocator allocate = host_image_buffer);
  ~batch_loader();
  batch_loader(const batch_loader&) = delete;
  batch_loader& operator=(const batch_loader&) = delete;

  /// Micro-batches served per epoch.
  int64_t micro_batches_per_epoch() const { return micro_batches_; }
  /// The source the batches come from.
  const image_source& source() const { return *source_; }

  /// Starts epoch `epoch` at micro-batch `position` (0 ≤ position ≤ micro_batches_per_epoch(); a
  /// resume point). Work of the previous epoch still in flight is dropped.
  void start_epoch(int epoch, int64_t position = 0);

  /// The next micro-batch of the epoch, waiting for it if needed; false at the epoch's end. An
  /// exception a worker met making this batch (a bad image under on_bad_image: fail names its path)
  /// is rethrown here, in order.
  bool next(loaded_batch& out);

  /// The waited-time counter and friends, since construction.
  loader_stats stats() const;

 private:
  struct slot {
    bool ready = false;
    int64_t position = -1;
    loaded_batch batch;
    std::exception_ptr error;
  };

  void work();
  loaded_batch make(const std::vector<int64_t>& order, int epoch, int64_t position) const;

  std::shared_ptr<const image_source> source_;
  loader_options options_;
  image_allocator allocate_;
  int64_t micro_batches_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_, batch_ready_;
  bool active_ = false, stopping_ = false;
  uint64_t generation_ = 0;  // bumped by start_epoch: batches of an older generation are dropped
  int epoch_ = 0;
  std::shared_ptr<const std::vector<int64_t>> order_;
  int64_t next_claim_ = 0, next_serve_ = 0;
  std::vector<slot> ring_;
  loader_stats stats_;
  std::vector<std::thread> workers_;
};

}  // namespace petra::data
