// The CPU backend's recycling pool of large host buffers.
#include "compute/cpu/host_pool.hpp"

#include <cstdlib>
#include <new>

namespace petra {

namespace {

constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t bytes) { return (bytes + page - 1) / page * page; }

}  // namespace

std::shared_ptr<host_pool> host_pool::create(std::size_t max_cached_bytes) {
  return std::shared_ptr<host_pool>(new host_pool(max_cached_bytes));
}

host_pool::~host_pool() {
  for (auto& [bytes, blocks] : idle_)
    for (void* block : blocks) std::free(block);
}

tensor host_pool::empty(const shape_t& shape) {
  const std::size_t bytes = static_cast<std::size_t>(numel_of(shape)) * sizeof(float);
  if (bytes < min_pooled_bytes) return tensor::empty(shape);
  const std::size_t rounded = round_up(bytes);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = idle_.find(rounded);
    if (found != idle_.end() && !found->second.empty()) {
      block = found->second.back();
      found->second.pop_back();
      idle_bytes_ -= rounded;
    }
  }
  if (!block) {
    block = std::aligned_alloc(64, rounded);
    if (!block) throw std::bad_alloc();
  }
  // The deleter keeps the pool alive for as long as any of its blocks is in use.
  auto buffer = std::make_shared<storage>(
      block, bytes, device{}, [pool = shared_from_this(), rounded](void* p) { pool->give_back(p, rounded); });
  return tensor(shape, std::move(buffer));
}

void host_pool::give_back(void* block, std::size_t rounded_bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_bytes_ + rounded_bytes <= max_cached_bytes_) {
      idle_[rounded_bytes].push_back(block);
      idle_bytes_ += rounded_bytes;
      return;
    }
  }
  std::free(block);
}

std::size_t host_pool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_bytes_;
}

}  // namespace petra
