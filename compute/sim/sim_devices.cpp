// The registry of simulated devices.
#include "compute/sim/sim_devices.hpp"

#include <stdexcept>
#include <string>

#include "compute/sim/sim_device.hpp"

namespace petra {

sim_devices::sim_devices() = default;
sim_devices::~sim_devices() = default;

std::shared_ptr<sim::device_worker> sim_devices::get(int index) {
  if (index < 0 || index > 999)
    throw std::invalid_argument("sim:" + std::to_string(index) + ": a simulated device index is in [0, 999]");
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<sim::device_worker>& d = devices_[index];
  if (!d) d = std::make_shared<sim::device_worker>(index);
  return d;
}

int64_t sim_devices::bytes_in_use(int index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = devices_.find(index);
  return found == devices_.end() ? 0 : found->second->memory()->bytes.load();
}

sim_devices::pause_guard sim_devices::pause(int index) { return pause_guard(get(index)); }

sim_devices::pause_guard::pause_guard(std::shared_ptr<sim::device_worker> d) : device_(std::move(d)) {
  device_->hold();
}

sim_devices::pause_guard::~pause_guard() { release(); }

void sim_devices::pause_guard::release() {
  if (device_) device_->release();
  device_.reset();
}

}  // namespace petra
