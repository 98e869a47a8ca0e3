// image_source's argument checks and the bad-image log.
#include "datasets/image_source.hpp"

#include <stdexcept>

namespace petra::data {

bad_image_policy parse_bad_image_policy(const std::string& text) {
  if (text == "skip") return bad_image_policy::skip;
  if (text == "fail") return bad_image_policy::fail;
  throw std::invalid_argument("on_bad_image '" + text + "': expected skip or fail");
}

bool bad_image_log::record(bad_image entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!indices_.insert(entry.index).second) return false;
  entries_.push_back(std::move(entry));
  return true;
}

bool bad_image_log::contains(int64_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return indices_.count(index) != 0;
}

int64_t bad_image_log::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(entries_.size());
}

std::vector<bad_image> bad_image_log::entries(int64_t from) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (from < 0) from = 0;
  if (from >= static_cast<int64_t>(entries_.size())) return {};
  return {entries_.begin() + from, entries_.end()};
}

void image_source::fill_batch(const int64_t* indices, int64_t count, bool train, uint64_t seed, int epoch,
                              int64_t first_position, float* images, int32_t* labels) const {
  if (count < 0)
    throw std::invalid_argument(name() + ": fill_batch count = " + std::to_string(count) + ", expected ≥ 0");
  if (count == 0) return;
  if (indices == nullptr || images == nullptr || labels == nullptr) {
    throw std::invalid_argument(name() + ": fill_batch got a null indices, images or labels pointer for " +
                                std::to_string(count) + " samples");
  }
  const int64_t n = this->count();
  for (int64_t i = 0; i < count; ++i) {
    if (indices[i] < 0 || indices[i] >= n) {
      throw std::out_of_range(name() + ": fill_batch indices[" + std::to_string(i) + "] = " +
                              std::to_string(indices[i]) + " is outside [0, " + std::to_string(n) + ")");
    }
  }
  fill_checked(indices, count, train, seed, epoch, first_position, images, labels);
}

}  // namespace petra::data
