// One backend's hold on a GPU: its stream, its cuDNN and cuBLAS handles bound to that stream,
// and device memory whose frees are ordered after every stream's earlier work on the device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <type_traits>

#include "compute/tensor.hpp"

namespace petra::cuda {

/// Makes GPU `index` the calling thread's current device when it is not already (stage
/// actors may run a backend on any thread of the scheduler).
void use_device(int index);

/// `bytes` of uninitialised memory on GPU `index`, allocated in `stream`'s order. It is freed
/// on the device's legacy default stream, which waits for the earlier work of every blocking
/// stream on the device: a tensor read by another backend's stream is never freed under it.
std::shared_ptr<storage> allocate_device(std::size_t bytes, int index, cudaStream_t stream,
                                         bool stream_ordered);

class device_context {
 public:
  /// Creates a blocking stream on GPU `index` and handles bound to it; `tf32` allows TF32
  /// tensor-core math in cuBLAS GEMMs (convolutions choose theirs per call).
  device_context(int index, bool tf32);
  ~device_context();
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  int index() const { return index_; }
  cudaStream_t stream() const { return stream_.get(); }
  cudnnHandle_t dnn() const { return dnn_.get(); }
  cublasHandle_t blas() const { return blas_.get(); }

  /// Uninitialised device memory for a tensor of `bytes`.
  std::shared_ptr<storage> allocate(std::size_t bytes) const;
  /// At least `bytes` of scratch for cuDNN, reused across calls (grown, never shrunk).
  void* workspace(std::size_t bytes);
  /// The host waits for everything queued on the stream.
  void synchronize() const;

 private:
  struct stream_deleter {
    void operator()(cudaStream_t s) const;
  };
  struct dnn_deleter {
    void operator()(cudnnHandle_t h) const;
  };
  struct blas_deleter {
    void operator()(cublasHandle_t h) const;
  };

  int index_;
  bool stream_ordered_ = false;  // cudaMallocAsync available (memory pools)
  std::unique_ptr<std::remove_pointer_t<cudaStream_t>, stream_deleter> stream_;
  std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, dnn_deleter> dnn_;
  std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, blas_deleter> blas_;
  std::shared_ptr<storage> workspace_;
};

}  // namespace petra::cuda
