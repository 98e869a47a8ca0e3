// in_memory_source: make_batch behind the image_source interface.
#include "datasets/in_memory_source.hpp"

#include <stdexcept>
#include <string>

namespace petra::data {

in_memory_source::in_memory_source(std::shared_ptr<const dataset> data, augment_options augment)
    : data_(std::move(data)), augment_(std::move(augment)) {
  if (!data_) throw std::invalid_argument("in_memory_source: null dataset");
  check_augment_options(augment_, data_->channels);
}

int32_t in_memory_source::label(int64_t index) const {
  if (index < 0 || index >= data_->count) {
    throw std::out_of_range(data_->name + ": label index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(data_->count) + ")");
  }
  return data_->labels[static_cast<std::size_t>(index)];
}

void in_memory_source::fill_checked(const int64_t* indices, int64_t count, bool train, uint64_t seed,
                                    int epoch, int64_t first_position, float* images, int32_t* labels) const {
  make_batch(*data_, indices, count, augment_, train, seed, epoch, first_position, images, labels);
}

}  // namespace petra::data
