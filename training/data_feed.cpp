// Dataset → micro-batches.
#include "training/data_feed.hpp"

#include <numeric>

namespace petra {

data_feed::data_feed(std::shared_ptr<const data::dataset> d, const data::augment_options& augment, bool train,
                     int micro_batch, int accumulation, uint64_t seed)
    : data_(std::move(d)), augment_(augment), train_(train), micro_batch_(micro_batch), seed_(seed) {
  data::check_augment_options(augment_, data_->channels);
  if (train) {
    const int64_t per_step = static_cast<int64_t>(micro_batch) * accumulation;
    micro_batches_ = (data_->count / per_step) * accumulation;
  } else {
    micro_batches_ = (data_->count + micro_batch - 1) / micro_batch;
  }
}

void data_feed::start_epoch(int epoch, int64_t position) {
  epoch_ = epoch;
  position_ = position;
  next_id_ = static_cast<int64_t>(epoch) * micro_batches_ + position;
  if (train_) {
    order_ = data::epoch_order(data_->count, seed_, epoch);
  } else {
    order_.resize(static_cast<std::size_t>(data_->count));
    std::iota(order_.begin(), order_.end(), 0);
  }
}

bool data_feed::next(micro_batch& out) {
  if (position_ >= micro_batches_) return false;
  const int64_t first = position_ * micro_batch_;
  const int64_t count = std::min<int64_t>(micro_batch_, data_->count - first);
  tensor images = tensor::empty({count, data_->channels, data_->height, data_->width});
  out.labels.resize(static_cast<std::size_t>(count));
  data::make_batch(*data_, order_.data() + first, count, augment_, train_, seed_, epoch_, first,
                   images.data(), out.labels.data());
  out.images = activation{images, {}};
  out.id = next_id_++;
  ++position_;
  return true;
}

}  // namespace petra
