// Simulated-device memory: lazily backed host buffers, ownership and hand-over events.
#include "compute/sim/sim_storage.hpp"

#include <cstring>

namespace petra::sim {

sim_storage::sim_storage(std::size_t bytes, int device_index, uint64_t owner,
                         std::shared_ptr<memory_counter> memory)
    : storage(nullptr, bytes, device{device_type::sim, device_index}, nullptr),
      owner_(owner),
      memory_(std::move(memory)) {
  memory_->bytes += static_cast<int64_t>(bytes);
}

sim_storage::~sim_storage() { memory_->bytes -= static_cast<int64_t>(bytes()); }

std::pair<std::shared_ptr<storage>, std::size_t> sim_storage::values() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!values_) {
    values_ = storage::allocate_host(bytes());
    if (bytes()) std::memset(values_->data(), 0, bytes());
    values_offset_ = 0;
  }
  return {values_, values_offset_};
}

void sim_storage::install(const tensor& result) {
  std::lock_guard<std::mutex> lock(mutex_);
  values_ = result.buffer();
  values_offset_ = result.offset();
}

bool sim_storage::usable_by(uint64_t id) const {
  if (id == owner_) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  return users_.count(id) != 0;
}

void sim_storage::add_user(uint64_t id) {
  if (id == owner_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  users_.insert(id);
}

std::shared_ptr<event> sim_storage::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ready_;
}

void sim_storage::set_ready(std::shared_ptr<event> point) {
  std::lock_guard<std::mutex> lock(mutex_);
  ready_ = std::move(point);
}

tensor host_view(const tensor& t) {
  if (!t.defined()) return {};
  auto [values, offset] = storage_of(t).values();
  return tensor(t.shape(), std::move(values), offset + t.offset());
}

}  // namespace petra::sim
