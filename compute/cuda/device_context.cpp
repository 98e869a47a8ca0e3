// The GPU context of one backend: stream, handles, device memory, workspace and pinned memory.
#include "compute/cuda/device_context.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "compute/cuda/checks.hpp"
#include "compute/cuda/cublas_library.hpp"

namespace petra::cuda {

namespace {

// Idle pinned blocks kept per backend: a few activations' worth; pinning is slow to set up.
constexpr std::size_t max_idle_pinned_bytes = std::size_t{256} << 20;

}  // namespace

cudaMemPool_t memory_pool(int index) {
  int pools = 0;
  PETRA_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, index));
  if (!pools) return nullptr;
  cudaMemPool_t pool = nullptr;
  PETRA_CUDA_CHECK(cudaDeviceGetMemPool(&pool, index));
  return pool;
}

void device_context::dnn_deleter::operator()(cudnnHandle_t h) const { cudnnDestroy(h); }
void device_context::blas_deleter::operator()(cublasHandle_t h) const { cublas().destroy(h); }

device_context::device_context(int index, bool tf32) : index_(index) {
  int count = 0;
  PETRA_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count)
    throw std::invalid_argument("device cuda:" + std::to_string(index) +
                                " does not exist: this machine has " + std::to_string(count) +
                                " GPU(s), cuda:0 to cuda:" + std::to_string(count - 1));
  use_device(index);
  if (cudaMemPool_t pool = memory_pool(index)) {
    pooled_ = true;
    // Keep freed blocks in the pool instead of returning them to the driver at every
    // synchronisation: the same activation sizes come back every micro-batch.
    uint64_t keep = std::numeric_limits<uint64_t>::max();
    PETRA_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  stream_ = std::make_shared<stream_handle>(index);
  cudnnHandle_t d = nullptr;
  PETRA_CUDA_CHECK(cudnnCreate(&d));
  dnn_.reset(d);
  PETRA_CUDA_CHECK(cudnnSetStream(d, stream()));
  cublasHandle_t b = nullptr;
  PETRA_CUDA_CHECK(cublas().create(&b));
  blas_.reset(b);
  PETRA_CUDA_CHECK(cublas().set_stream(b, stream()));
  PETRA_CUDA_CHECK(cublas().set_pointer_mode(b, CUBLAS_POINTER_MODE_HOST));
  // CUBLAS_DEFAULT_MATH keeps fp32 GEMMs in full fp32 (FMA), matching the CPU twin at 1e-4.
  PETRA_CUDA_CHECK(cublas().set_math_mode(b, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  pinned_ = pinned_pool::create(max_idle_pinned_bytes);
}

device_context::~device_context() {
  // Drained first; then the members in reverse order: uploads, pinned pool (kept alive by the
  // host tensors still out), workspace (freed in stream order), the handles, and the stream
  // (kept alive by the memory that still refers to it).
  // The device stays current for the members' destructors (cuDNN, cuBLAS).
  cudaSetDevice(index_);
  cudaStreamSynchronize(stream());
  cudaGetLastError();
}

std::shared_ptr<device_storage> device_context::allocate(std::size_t bytes) const {
  return allocate_device(bytes, stream_, pooled_);
}

void* device_context::workspace(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (!workspace_ || workspace_->bytes() < bytes) {
    workspace_.reset();  // freed after the work already queued that uses it
    workspace_ = allocate(bytes);
  }
  return workspace_->data();
}

void device_context::synchronize() const { PETRA_CUDA_CHECK(cudaStreamSynchronize(stream())); }

}  // namespace petra::cuda
