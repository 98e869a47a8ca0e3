// batch_loader: micro-batch b lives in ring slot b mod prefetch; a worker claims b only while
// b < next_serve + prefetch, so the slot it will fill has always been emptied by the consumer.
#include "datasets/batch_loader.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <string>

#include "datasets/shuffle.hpp"

namespace petra::data {

image_buffer host_image_buffer(int64_t count, const image_shape& shape) {
  auto storage = std::make_shared<std::vector<float>>(static_cast<std::size_t>(count * shape.size()));
  return {storage->data(), storage};
}

batch_loader::batch_loader(std::shared_ptr<const image_source> source, loader_options options,
                           image_allocator allocate)
    : source_(std::move(source)), options_(options), allocate_(std::move(allocate)) {
  if (!source_) throw std::invalid_argument("batch_loader: null image source");
  if (!allocate_) throw std::invalid_argument("batch_loader: empty allocator");
  if (options_.micro_batch < 1) {
    throw std::invalid_argument("batch_loader: micro_batch = " + std::to_string(options_.micro_batch) +
                                ", expected ≥ 1");
  }
  if (options_.workers < 0) {
    throw std::invalid_argument("batch_loader: workers = " + std::to_string(options_.workers) +
                                ", expected ≥ 0 (0 = fill on the caller's thread)");
  }
  if (options_.prefetch < 0) {
    throw std::invalid_argument("batch_loader: prefetch = " + std::to_string(options_.prefetch) +
                                ", expected ≥ 0 (0 = twice the workers)");
  }
  const int64_t available = (source_->count() + options_.micro_batch - 1) / options_.micro_batch;
  micro_batches_ = options_.micro_batches == 0 ? available : options_.micro_batches;
  if (micro_batches_ < 0 || micro_batches_ > available) {
    throw std::invalid_argument("batch_loader: micro_batches = " + std::to_string(options_.micro_batches) +
                                " but " + source_->name() + " holds " + std::to_string(source_->count()) +
                                " samples, enough for " + std::to_string(available) + " micro-batches of " +
                                std::to_string(options_.micro_batch));
  }
  const int prefetch = options_.prefetch > 0 ? options_.prefetch : 2 * std::max(options_.workers, 1);
  ring_.resize(static_cast<std::size_t>(prefetch));
  workers_.reserve(static_cast<std::size_t>(options_.workers));
  for (int w = 0; w < options_.workers; ++w) workers_.emplace_back([this] { work(); });
}

batch_loader::~batch_loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void batch_loader::start_epoch(int epoch, int64_t position) {
  if (position < 0 || position > micro_batches_) {
    throw std::invalid_argument("batch_loader::start_epoch: position " + std::to_string(position) +
                                " is outside [0, " + std::to_string(micro_batches_) + "]");
  }
  std::vector<int64_t> order;
  if (options_.train) {
    order = epoch_order(source_->count(), options_.seed, epoch);
  } else {
    order.resize(static_cast<std::size_t>(source_->count()));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  std::vector<slot> dropped(ring_.size());  // released after the lock: an owner may run caller code
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    epoch_ = epoch;
    order_ = std::make_shared<const std::vector<int64_t>>(std::move(order));
    next_claim_ = next_serve_ = position;
    active_ = true;
    std::swap(dropped, ring_);
  }
  work_ready_.notify_all();
}

loaded_batch batch_loader::make(const std::vector<int64_t>& order, int epoch, int64_t position) const {
  const int64_t first = position * options_.micro_batch;
  const int64_t count = std::min<int64_t>(options_.micro_batch, static_cast<int64_t>(order.size()) - first);
  loaded_batch batch;
  batch.epoch = epoch;
  batch.position = position;
  batch.count = count;
  batch.images = allocate_(count, source_->shape());
  if (batch.images.data == nullptr) {
    throw std::runtime_error("batch_loader: the allocator gave no memory for " + std::to_string(count) +
                             " images of " + source_->name());
  }
  batch.labels.resize(static_cast<std::size_t>(count));
  source_->fill_batch(order.data() + first, count, options_.train, options_.seed, epoch, first,
                      batch.images.data, batch.labels.data());
  return batch;
}

void batch_loader::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] {
      return stopping_ || (active_ && next_claim_ < micro_batches_ &&
                           next_claim_ < next_serve_ + static_cast<int64_t>(ring_.size()));
    });
    if (stopping_) return;
    const int64_t position = next_claim_++;
    const uint64_t generation = generation_;
    const int epoch = epoch_;
    const std::shared_ptr<const std::vector<int64_t>> order = order_;
    lock.unlock();
    slot made;
    try {
      made.batch = make(*order, epoch, position);
    } catch (...) {
      made.error = std::current_exception();
    }
    lock.lock();
    if (generation != generation_) {  // start_epoch ran meanwhile: this batch is of no use
      lock.unlock();
      made = slot{};
      lock.lock();
      continue;
    }
    slot& target = ring_[static_cast<std::size_t>(position) % ring_.size()];
    made.ready = true;
    made.position = position;
    target = std::move(made);
    batch_ready_.notify_all();
  }
}

bool batch_loader::next(loaded_batch& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!active_) throw std::logic_error("batch_loader::next called before start_epoch");
  if (next_serve_ >= micro_batches_) return false;
  const int64_t position = next_serve_;
  slot taken;
  if (workers_.empty()) {  // no workers: fill here, on the caller's thread
    const std::shared_ptr<const std::vector<int64_t>> order = order_;
    const int epoch = epoch_;
    ++next_serve_;
    lock.unlock();
    try {
      taken.batch = make(*order, epoch, position);
    } catch (...) {
      taken.error = std::current_exception();
    }
    lock.lock();
  } else {
    slot& s = ring_[static_cast<std::size_t>(position) % ring_.size()];
    if (!(s.ready && s.position == position)) {
      const auto start = std::chrono::steady_clock::now();
      batch_ready_.wait(lock, [&] { return s.ready && s.position == position; });
      stats_.waited_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++stats_.waits;
    }
    taken = std::move(s);
    s = slot{};
    ++next_serve_;
    work_ready_.notify_one();  // a slot is free: one more micro-batch may be claimed
  }
  ++stats_.served;
  lock.unlock();
  if (taken.error) std::rethrow_exception(taken.error);
  out = std::move(taken.batch);
  return true;
}

loader_stats batch_loader::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace petra::data
