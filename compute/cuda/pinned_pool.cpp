// Pinned host memory: its blocks (for the pool) and the ring of uploads in flight.
#include "compute/cuda/pinned_pool.hpp"

#include <cuda_runtime_api.h>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend.hpp"

namespace petra::cuda {

bool is_pinned(const tensor& t) { return dynamic_cast<const pinned_storage*>(t.buffer().get()) != nullptr; }

void* pinned_memory::allocate(std::size_t bytes) {
  void* block = nullptr;
  PETRA_CUDA_CHECK(cudaHostAlloc(&block, bytes, cudaHostAllocPortable));
  return block;
}

void pinned_memory::release(void* block, std::size_t) {
  cudaFreeHost(block);
  cudaGetLastError();  // a failed free (the driver going away at exit) is not this caller's error
}

tensor pinned_memory::unpooled(const shape_t& shape) {
  return tensor(shape, std::make_shared<pinned_storage>(nullptr, 0, device{}, nullptr));
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
