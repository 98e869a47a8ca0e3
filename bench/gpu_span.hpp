// bench_gpu_step's GPU span of a step: CUDA events on a CUDA backend's stream (nothing without
// CUDA in the build).
#pragma once

#include <stdexcept>

#include "compute/backend.hpp"

#ifdef PETRA_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "compute/cuda/cuda_backend_impl.hpp"  // the backend's stream
#endif

namespace petra::bench {

/// The GPU's span of each step: events on the backend's stream before its first op and after its
/// last, as torch.cuda.Event times the PyTorch peer (it includes the GPU's idle gaps between
/// kernels, not the host's wait before the first one or after the last). None without CUDA.
class gpu_span {
 public:
#ifdef PETRA_HAVE_CUDA
  explicit gpu_span(backend& be) : stream_(dynamic_cast<cuda_backend&>(be).stream()) {
    if (cudaEventCreate(&start_) != cudaSuccess || cudaEventCreate(&end_) != cudaSuccess)
      throw std::runtime_error("bench_gpu_step: cudaEventCreate failed");
  }
  ~gpu_span() {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
  }
  void start() { cudaEventRecord(start_, stream_); }
  void stop() { cudaEventRecord(end_, stream_); }
  /// After the stream has reached stop(): its milliseconds.
  double ms() const {
    float out = 0;
    if (cudaEventElapsedTime(&out, start_, end_) != cudaSuccess)
      throw std::runtime_error("bench_gpu_step: cudaEventElapsedTime failed");
    return out;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
#else
  explicit gpu_span(backend&) {}
  void start() {}
  void stop() {}
  double ms() const { return 0; }
#endif
};

}  // namespace petra::bench
