// The GPU context of one backend: stream, handles, device memory and cuDNN workspace.
#include "compute/cuda/device_context.hpp"

#include <cstdint>
#include <limits>

#include "compute/cuda/checks.hpp"

namespace petra::cuda {

void use_device(int index) {
  int current = -1;
  PETRA_CUDA_CHECK(cudaGetDevice(&current));
  if (current != index) PETRA_CUDA_CHECK(cudaSetDevice(index));
}

std::shared_ptr<storage> allocate_device(std::size_t bytes, int index, cudaStream_t stream,
                                         bool stream_ordered) {
  const device where{device_type::cuda, index};
  if (bytes == 0) return std::make_shared<storage>(nullptr, 0, where, nullptr);
  void* data = nullptr;
  if (stream_ordered)
    PETRA_CUDA_CHECK(cudaMallocAsync(&data, bytes, stream));
  else
    PETRA_CUDA_CHECK(cudaMalloc(&data, bytes));
  // The deleter runs wherever the last handle goes (any thread, any current device) and must
  // not throw: a failure there (e.g. the runtime already unloading at exit) is dropped.
  return std::make_shared<storage>(data, bytes, where, [index, stream_ordered](void* p) {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) current = -1;
    if (current != index) cudaSetDevice(index);
    if (stream_ordered)
      cudaFreeAsync(p, cudaStreamLegacy);
    else
      cudaFree(p);
    if (current >= 0 && current != index) cudaSetDevice(current);
    cudaGetLastError();
  });
}

void device_context::stream_deleter::operator()(cudaStream_t s) const {
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}
void device_context::dnn_deleter::operator()(cudnnHandle_t h) const { cudnnDestroy(h); }
void device_context::blas_deleter::operator()(cublasHandle_t h) const { cublasDestroy(h); }

device_context::device_context(int index, bool tf32) : index_(index) {
  int count = 0;
  PETRA_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count)
    throw std::invalid_argument("device cuda:" + std::to_string(index) +
                                " does not exist: this machine has " + std::to_string(count) +
                                " GPU(s), cuda:0 to cuda:" + std::to_string(count - 1));
  use_device(index);
  int pools = 0;
  PETRA_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, index));
  stream_ordered_ = pools != 0;
  if (stream_ordered_) {
    // Keep freed blocks in the pool instead of returning them to the driver at every
    // synchronisation: the same activation sizes come back every micro-batch.
    cudaMemPool_t pool = nullptr;
    PETRA_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, index));
    uint64_t keep = std::numeric_limits<uint64_t>::max();
    PETRA_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }

  cudaStream_t s = nullptr;
  PETRA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamDefault));  // blocking: see allocate_device
  stream_.reset(s);
  cudnnHandle_t d = nullptr;
  PETRA_CUDA_CHECK(cudnnCreate(&d));
  dnn_.reset(d);
  PETRA_CUDA_CHECK(cudnnSetStream(d, s));
  cublasHandle_t b = nullptr;
  PETRA_CUDA_CHECK(cublasCreate(&b));
  blas_.reset(b);
  PETRA_CUDA_CHECK(cublasSetStream(b, s));
  PETRA_CUDA_CHECK(cublasSetPointerMode(b, CUBLAS_POINTER_MODE_HOST));
  // CUBLAS_DEFAULT_MATH keeps fp32 GEMMs in full fp32 (FMA), matching the CPU twin at 1e-4.
  PETRA_CUDA_CHECK(cublasSetMathMode(b, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

device_context::~device_context() {
  // The members then go in reverse order: workspace (freed in stream order), the handles,
  // and last the stream they are bound to, after it has drained.
  cudaSetDevice(index_);
  cudaGetLastError();
}

std::shared_ptr<storage> device_context::allocate(std::size_t bytes) const {
  return allocate_device(bytes, index_, stream(), stream_ordered_);
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
