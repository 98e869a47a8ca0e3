// Pinned (page-locked) host memory for every copy between a GPU and the host: blocks come from
// cudaHostAlloc once and are reused, each going back to the pool when its last tensor goes; and
// the ring of uploads in flight, each holding its pinned source until its copy has run.
#pragma once

#include <cstddef>
#include <deque>

#include "compute/block_pool.hpp"
#include "compute/cuda/streams.hpp"
#include "compute/tensor.hpp"

namespace petra::cuda {

/// Host memory that the GPUs can copy from and to asynchronously (portable: any device).
class pinned_storage final : public storage {
 public:
  using storage::storage;
};

/// True when `t`'s buffer is pinned memory of a pinned_pool.
bool is_pinned(const tensor& t);

/// Blocks from cudaHostAlloc (portable: any device may copy from and to them); every size is
/// pooled, an empty tensor has no block.
struct pinned_memory {
  using storage_type = pinned_storage;
  static constexpr std::size_t min_pooled_bytes = 0;
  static void* allocate(std::size_t bytes);
  static void release(void* block, std::size_t bytes);
  static tensor unpooled(const shape_t& shape);
};

/// Pinned host tensors (device `cpu`: any host code may read them); at most `max_idle_bytes` stay
/// cached while unused, the rest goes back to the driver.
using pinned_pool = block_pool<pinned_memory>;

/// The uploads a backend has queued and not yet seen finish: each keeps its pinned source (a
/// staging block, or a pinned tensor of a message) alive until its event has passed.
class upload_ring {
 public:
  explicit upload_ring(std::size_t max_in_flight) : max_in_flight_(max_in_flight) {}
  ~upload_ring();  // waits for the uploads still in flight
  upload_ring(const upload_ring&) = delete;
  upload_ring& operator=(const upload_ring&) = delete;

  /// After queueing a copy from `source` on `stream`: remembers it until that copy has run. Also
  /// drops the finished ones, and waits for the oldest while more than max_in_flight are queued.
  void push(int device, cudaStream_t stream, tensor source);
  std::size_t in_flight() const { return uploads_.size(); }

 private:
  struct upload {
    event_handle done;
    tensor source;
  };
  const std::size_t max_in_flight_;
  std::deque<upload> uploads_;
};

}  // namespace petra::cuda
