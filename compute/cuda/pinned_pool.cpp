// Pinned host memory: the pool of blocks and the ring of uploads in flight.
#include "compute/cuda/pinned_pool.hpp"

#include <cuda_runtime_api.h>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend.hpp"

namespace petra::cuda {

namespace {

constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t bytes) { return (bytes + page - 1) / page * page; }

}  // namespace

bool is_pinned(const tensor& t) { return dynamic_cast<const pinned_storage*>(t.buffer().get()) != nullptr; }

std::shared_ptr<pinned_pool> pinned_pool::create(std::size_t max_idle_bytes) {
  return std::make_shared<pinned_pool>(key{}, max_idle_bytes);
}

pinned_pool::~pinned_pool() {
  for (auto& [bytes, blocks] : idle_)
    for (void* block : blocks) cudaFreeHost(block);
  cudaGetLastError();
}

tensor pinned_pool::empty(const shape_t& shape) {
  const std::size_t bytes = static_cast<std::size_t>(numel_of(shape)) * sizeof(float);
  if (bytes == 0) return tensor(shape, std::make_shared<pinned_storage>(nullptr, 0, device{}, nullptr));
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
  if (!block) PETRA_CUDA_CHECK(cudaHostAlloc(&block, rounded, cudaHostAllocPortable));
  // The deleter keeps the pool alive while any of its blocks is in use.
  return tensor(shape, std::make_shared<pinned_storage>(
                           block, bytes, device{},
                           [pool = shared_from_this(), rounded](void* p) { pool->give_back(p, rounded); }));
}

void pinned_pool::give_back(void* block, std::size_t rounded_bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_bytes_ + rounded_bytes <= max_idle_bytes_) {
      idle_[rounded_bytes].push_back(block);
      idle_bytes_ += rounded_bytes;
      return;
    }
  }
  cudaFreeHost(block);
  cudaGetLastError();
}

std::size_t pinned_pool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_bytes_;
}

upload_ring::~upload_ring() {
  for (upload& u : uploads_) cudaEventSynchronize(u.done.get());
  cudaGetLastError();
}

void upload_ring::push(int device, cudaStream_t stream, tensor source) {
  upload u{event_handle(device), std::move(source)};
  u.done.record(stream);
  uploads_.push_back(std::move(u));
  while (!uploads_.empty() && uploads_.front().done.done()) uploads_.pop_front();
  while (uploads_.size() > max_in_flight_) {
    uploads_.front().done.wait();
    uploads_.pop_front();
  }
}

}  // namespace petra::cuda

namespace petra {

std::function<tensor(const shape_t&)> make_pinned_host_tensors(std::size_t max_idle_bytes) {
  return
      [pool = cuda::pinned_pool::create(max_idle_bytes)](const shape_t& shape) { return pool->empty(shape); };
}

}  // namespace petra
