// The multi-tensor SGD step (sgd_kernels.cu): every parameter tensor of a stage in one launch,
// from a table on the device, each element as the per-tensor kernel computes it (sgd_math.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace petra::cuda::kernels {

/// One parameter tensor: device pointers (buffer null without momentum) and its weight decay.
/// The layout is the same for the host compiler and nvcc (plain scalars and pointers, no padding:
/// the host compares tables byte for byte).
struct sgd_tensor {
  float* w;
  float* grad;
  float* buffer;
  int64_t count;
  float weight_decay;
  float unused;  // 0: fills what would be padding
};
static_assert(sizeof(sgd_tensor) == 40, "sgd_tensor has no padding");

/// Elements [begin, end) of tensor `tensor`: one block's share.
struct sgd_chunk {
  int64_t tensor;
  int64_t begin;
  int64_t end;
};
static_assert(sizeof(sgd_chunk) == 24, "sgd_chunk has no padding");

/// Elements per chunk: 32 per thread of a 256-thread block.
constexpr int64_t sgd_chunk_elements = 8192;

/// For every chunk of `chunks` (device memory, `chunk_count` of them, over `tensors`, device
/// memory): the SGD step of its elements with the tensor's weight decay (sgd_plain_element when
/// `momentum` is 0, else sgd_momentum_element), then grad = 0. Chunks must not overlap.
void multi_sgd(const sgd_tensor* tensors, const sgd_chunk* chunks, int64_t chunk_count, float lr,
               float momentum, float grad_scale, bool nesterov, cudaStream_t stream);

}  // namespace petra::cuda::kernels
