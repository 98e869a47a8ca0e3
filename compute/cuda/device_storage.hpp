// GPU memory owned by one stream: allocated in its order, and freed in its order only after the
// work that every importing stream had queued when the last handle went (docs/design.md §5).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "compute/cuda/streams.hpp"
#include "compute/tensor.hpp"

namespace petra::cuda {

class device_storage final : public storage {
 public:
  /// Takes `data` (`bytes` on the owner's GPU); `pooled`: from cudaMallocAsync, freed with
  /// cudaFreeAsync on the owner stream; otherwise from cudaMalloc, freed after both drained.
  device_storage(void* data, std::size_t bytes, std::shared_ptr<stream_handle> owner, bool pooled);
  ~device_storage() override;

  const std::shared_ptr<stream_handle>& owner() const { return owner_; }
  /// True when `s` is the owner or has imported this memory.
  bool usable_by(const stream_handle& s) const;
  /// An importing stream: the free waits for the work it has queued by then.
  void add_user(std::shared_ptr<stream_handle> user);
  /// Export: records on `s` (a stream of this GPU that may use the memory) the point after which
  /// the values are complete.
  void record_ready(const stream_handle& s);
  /// Import: `waiter` (any GPU's stream) runs its later work after the recorded point; false when
  /// nothing was recorded (the producer did not export it).
  bool wait_ready(cudaStream_t waiter) const;

 private:
  const std::shared_ptr<stream_handle> owner_;
  const bool pooled_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<stream_handle>> users_;
  cudaEvent_t ready_ = nullptr;  // created on the owner's GPU at the first export
};

/// `bytes` of uninitialised memory on `owner`'s GPU in its stream order (`pooled`: cudaMallocAsync).
std::shared_ptr<device_storage> allocate_device(std::size_t bytes,
                                                const std::shared_ptr<stream_handle>& owner, bool pooled);

}  // namespace petra::cuda
