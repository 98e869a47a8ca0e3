// Image source → micro-batches, through the batch loader.
#include "training/data_feed.hpp"

#include <stdexcept>
#include <utility>

namespace petra {
namespace {

data::loader_options loader_options_of(const data::image_source& source, const feed_options& o) {
  if (o.micro_batch < 1 || o.accumulation < 1)
    throw std::invalid_argument("data_feed: micro_batch " + std::to_string(o.micro_batch) +
                                " and accumulation " + std::to_string(o.accumulation) + " must both be ≥ 1");
  data::loader_options l;
  l.micro_batch = o.micro_batch;
  l.train = o.train;
  l.seed = o.seed;
  l.workers = o.workers;
  if (o.train) {
    const int64_t per_step = int64_t{o.micro_batch} * o.accumulation;
    l.micro_batches = (source.count() / per_step) * o.accumulation;
    if (l.micro_batches == 0)
      throw std::invalid_argument("the training set (" + std::to_string(source.count()) + " images of " +
                                  source.name() +
                                  ") is smaller than one optimizer batch (micro_batch · "
                                  "accumulation = " +
                                  std::to_string(per_step) + ")");
  }  // eval: 0 = every sample, the last micro-batch possibly short
  return l;
}

/// The loader's memory as tensors: the buffer's owner is the tensor's storage, so next() hands the
/// very memory the workers filled to the pipeline, pinned when the maker pins.
data::image_allocator tensor_allocator(host_tensor_maker make) {
  if (!make) make = [](const shape_t& shape) { return tensor::empty(shape); };
  return [make = std::move(make)](int64_t count, const data::image_shape& s) {
    tensor t = make({count, s.channels, s.height, s.width});
    if (t.where() != device{} || t.offset() != 0)
      throw std::logic_error("data_feed: the image memory must be a whole host allocation");
    return data::image_buffer{t.data(), t.buffer()};
  };
}

}  // namespace

data_feed::data_feed(std::shared_ptr<const data::image_source> source, feed_options options)
    : source_(std::move(source)),
      loader_(source_, loader_options_of(*source_, options), tensor_allocator(std::move(options.images))) {}

uint64_t data_feed::start_epoch(int epoch, int64_t position) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!(in_step_ && epoch == epoch_ && position == position_)) loader_.start_epoch(epoch, position);
  in_step_ = true;
  epoch_ = epoch;
  position_ = position;
  next_id_ = static_cast<int64_t>(epoch) * micro_batches_per_epoch() + position;
  return ++ticket_;
}

bool data_feed::next(micro_batch& out) {
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticket = ticket_;
  }
  if (ticket == 0) throw std::logic_error("data_feed::next called before start_epoch");
  return next(out, ticket);
}

bool data_feed::next(micro_batch& out, uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ticket != ticket_) return false;
  data::loaded_batch b;
  try {
    if (!loader_.next(b)) return false;
  } catch (...) {
    in_step_ = false;  // the loader went past the failed batch: the next start_epoch restarts it
    throw;
  }
  const data::image_shape s = source_->shape();
  tensor images({b.count, s.channels, s.height, s.width}, std::static_pointer_cast<storage>(b.images.owner));
  out.images = activation{images, {}};
  out.labels = std::move(b.labels);
  out.id = next_id_++;
  ++position_;
  return true;
}

}  // namespace petra
