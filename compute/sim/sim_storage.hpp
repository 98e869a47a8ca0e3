// The memory of a simulated-device tensor: host memory only the device's worker touches, the
// stream that made it, the streams that imported it, and the event its last export recorded.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "compute/sim/sim_device.hpp"
#include "compute/tensor.hpp"

namespace petra::sim {

class sim_storage final : public storage {
 public:
  /// `bytes` on `sim:device_index`, owned by stream `owner`; counted in `memory` while alive.
  sim_storage(std::size_t bytes, int device_index, uint64_t owner, std::shared_ptr<memory_counter> memory);
  ~sim_storage() override;

  /// Worker side: the host buffer and the offset (floats) where the values start. Memory that no
  /// op has written yet reads as zeros (what a consumer that did not wait for its producer sees).
  std::pair<std::shared_ptr<storage>, std::size_t> values();
  /// Worker side: an op's result becomes the values (no copy).
  void install(const tensor& result);

  uint64_t owner() const { return owner_; }
  /// True when stream `id` made or imported this memory.
  bool usable_by(uint64_t id) const;
  void add_user(uint64_t id);
  /// The point after which the values are complete, as the last export recorded it (or null).
  std::shared_ptr<event> ready() const;
  void set_ready(std::shared_ptr<event> point);

 private:
  const uint64_t owner_;
  const std::shared_ptr<memory_counter> memory_;
  mutable std::mutex mutex_;
  std::shared_ptr<storage> values_;  // null until written
  std::size_t values_offset_ = 0;
  std::set<uint64_t> users_;
  std::shared_ptr<event> ready_;
};

/// The sim storage behind a sim tensor (which the caller has checked).
inline sim_storage& storage_of(const tensor& t) { return static_cast<sim_storage&>(*t.buffer()); }

/// Worker side: `result` (an op's output on the host) becomes the values of `into`.
inline void install(const tensor& into, const tensor& result) { storage_of(into).install(result); }

/// Worker side: a host tensor that sees `t`'s values (undefined for an undefined `t`).
tensor host_view(const tensor& t);

}  // namespace petra::sim
