// A recycling pool of memory blocks for host tensors, one template for the CPU backend's large
// output buffers (compute/cpu/host_pool.hpp) and a GPU's pinned staging memory
// (compute/cuda/pinned_pool.hpp): the same bookkeeping over two ways to allocate.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "compute/tensor.hpp"

namespace petra {

/// Hands out host tensors (device `cpu`) from blocks of `memory`; a block goes back to the pool
/// when its last tensor goes (from any thread) and is reused for the next request of the same
/// rounded size. At most `max_idle_bytes` are kept idle; the rest is freed. The pool lives as long
/// as its last block. `memory` provides: `storage_type` (a storage), `min_pooled_bytes` (smaller
/// requests, and empty ones, come from `unpooled(shape)`), `allocate(bytes)` and `release(block, bytes)`.
template <typename memory>
class block_pool : public std::enable_shared_from_this<block_pool<memory>> {
  struct key {};

 public:
  static std::shared_ptr<block_pool> create(std::size_t max_idle_bytes) {
    return std::make_shared<block_pool>(key{}, max_idle_bytes);
  }
  block_pool(key, std::size_t max_idle_bytes) : max_idle_bytes_(max_idle_bytes) {}
  ~block_pool() {
    for (auto& [bytes, blocks] : idle_)
      for (void* block : blocks) memory::release(block, bytes);
  }
  block_pool(const block_pool&) = delete;
  block_pool& operator=(const block_pool&) = delete;

  /// An uninitialised tensor of `shape`.
  tensor empty(const shape_t& shape) {
    const std::size_t bytes = static_cast<std::size_t>(numel_of(shape)) * sizeof(float);
    if (bytes == 0 || bytes < memory::min_pooled_bytes) return memory::unpooled(shape);
    const std::size_t rounded = (bytes + page - 1) / page * page;
    void* block = take(rounded);
    if (!block) block = memory::allocate(rounded);
    // The deleter keeps the pool alive for as long as any of its blocks is in use.
    return tensor(shape, std::make_shared<typename memory::storage_type>(
                             block, bytes, device{}, [pool = this->shared_from_this(), rounded](void* p) {
                               pool->give_back(p, rounded);
                             }));
  }

 private:
  static constexpr std::size_t page = 4096;

  /// An idle block of `rounded_bytes`, or nullptr.
  void* take(std::size_t rounded_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = idle_.find(rounded_bytes);
    if (found == idle_.end() || found->second.empty()) return nullptr;
    void* block = found->second.back();
    found->second.pop_back();
    idle_bytes_ -= rounded_bytes;
    return block;
  }

  void give_back(void* block, std::size_t rounded_bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_bytes_ + rounded_bytes <= max_idle_bytes_) {
        idle_[rounded_bytes].push_back(block);
        idle_bytes_ += rounded_bytes;
        return;
      }
    }
    memory::release(block, rounded_bytes);
  }

  const std::size_t max_idle_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> idle_;  // by rounded size
  std::size_t idle_bytes_ = 0;
};

}  // namespace petra
