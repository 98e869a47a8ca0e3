// The simulated devices of one run: `sim:N` gets its worker thread on first use, shared by every
// sim backend placed on it. Whoever builds a run's backends owns one and passes it to
// make_backend (backend_options::sim); each backend keeps its own device alive.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace petra {

namespace sim {
class device_worker;
}

class sim_devices {
 public:
  sim_devices();
  ~sim_devices();
  sim_devices(const sim_devices&) = delete;
  sim_devices& operator=(const sim_devices&) = delete;

  /// The device `sim:index`, its worker started on first use (index in [0, 999]).
  std::shared_ptr<sim::device_worker> get(int index);
  /// Bytes held by live tensors of `sim:index` now (0 for a device not used yet).
  int64_t bytes_in_use(int index) const;

  /// While the returned guard lives, the worker of `sim:index` starts no work: a test queues
  /// work on several streams, then lets it run with a known interleaving.
  class pause_guard {
   public:
    explicit pause_guard(std::shared_ptr<sim::device_worker> d);
    ~pause_guard();
    pause_guard(pause_guard&& other) noexcept = default;
    pause_guard(const pause_guard&) = delete;
    pause_guard& operator=(const pause_guard&) = delete;
    pause_guard& operator=(pause_guard&&) = delete;
    /// Lets the worker run now (the destructor does it otherwise).
    void release();

   private:
    std::shared_ptr<sim::device_worker> device_;
  };
  pause_guard pause(int index);

 private:
  mutable std::mutex mutex_;
  std::map<int, std::shared_ptr<sim::device_worker>> devices_;
};

}  // namespace petra
