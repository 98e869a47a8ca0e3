// One backend's hold on a GPU: its non-blocking stream, its cuDNN and cuBLAS handles bound to
// that stream, stream-ordered device memory, and pinned host memory for copies to and from it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <type_traits>

#include "compute/cuda/device_storage.hpp"
#include "compute/cuda/pinned_pool.hpp"
#include "compute/cuda/streams.hpp"
#include "compute/tensor.hpp"

namespace petra::cuda {

/// The memory pool cudaMallocAsync draws from on GPU `index` (null when pools are unsupported).
cudaMemPool_t memory_pool(int index);

class device_context {
 public:
  /// Creates a non-blocking stream on GPU `index` and handles bound to it; `tf32` allows TF32
  /// tensor-core math in cuBLAS GEMMs (convolutions choose theirs per call).
  device_context(int index, bool tf32);
  ~device_context();  // drains the stream first
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  int index() const { return index_; }
  cudaStream_t stream() const { return stream_->get(); }
  const std::shared_ptr<stream_handle>& shared_stream() const { return stream_; }
  cudnnHandle_t dnn() const { return dnn_.get(); }
  cublasHandle_t blas() const { return blas_.get(); }
  /// True when device memory comes from the stream-ordered pool (cudaMallocAsync).
  bool pooled() const { return pooled_; }

  /// Uninitialised device memory for a tensor of `bytes`, owned by this context's stream.
  std::shared_ptr<device_storage> allocate(std::size_t bytes) const;
  /// At least `bytes` of scratch for cuDNN, reused across calls (grown, never shrunk).
  void* workspace(std::size_t bytes);
  /// An uninitialised pinned host tensor.
  tensor pinned(const shape_t& shape) const { return pinned_->empty(shape); }
  /// Remembers an upload queued on the stream from `source` (pinned) until it has run.
  void track_upload(tensor source) { uploads_.push(index_, stream(), std::move(source)); }
  /// The host waits for everything queued on the stream.
  void synchronize() const;

 private:
  struct dnn_deleter {
    void operator()(cudnnHandle_t h) const;
  };
  struct blas_deleter {
    void operator()(cublasHandle_t h) const;
  };

  int index_;
  bool pooled_ = false;
  std::shared_ptr<stream_handle> stream_;  // shared with the memory it owns and imports
  std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, dnn_deleter> dnn_;
  std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, blas_deleter> blas_;
  std::shared_ptr<storage> workspace_;
  std::shared_ptr<pinned_pool> pinned_;
  upload_ring uploads_{16};
};

}  // namespace petra::cuda
