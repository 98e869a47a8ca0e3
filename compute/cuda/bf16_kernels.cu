// The tensor-core bf16 path's conversions: fp32 → bf16 buffers with the CPU's rounding, bf16
// results → fp32 (with a convolution's bias, or accumulated into a gradient), and a convolution's
// bias gradient from the bf16 copy of dy, in add_channel_sums' order.
#include "compute/cuda/bf16_bits.cuh"
#include "compute/cuda/bf16_kernels.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/launch.cuh"

namespace petra::cuda::kernels {

namespace {

__device__ inline float widen(uint16_t v) { return __uint_as_float(static_cast<unsigned>(v) << 16); }

__global__ void to_bf16_kernel(const float* x, uint16_t* out, int64_t count) {
  PETRA_GRID_STRIDE(i, count) out[i] = static_cast<uint16_t>(bf16_bits_of(x[i]) >> 16);
}

__global__ void from_bf16_kernel(const uint16_t* x, const float* bias, float* y, int64_t channels,
                                 int64_t area, int64_t count) {
  PETRA_GRID_STRIDE(i, count) y[i] = bias ? widen(x[i]) + bias[(i / area) % channels] : widen(x[i]);
}

__global__ void add_from_bf16_kernel(const uint16_t* x, float* acc, int64_t count) {
  PETRA_GRID_STRIDE(i, count) acc[i] += widen(x[i]);
}

/// As add_channel_sums_kernel (kernels.cu): one block per channel, strided shares, a tree.
__global__ void add_channel_sums_bf16_kernel(const uint16_t* dy, float* db, int64_t n, int64_t channels,
                                             int64_t area) {
  __shared__ double partial[threads_per_block];
  const int64_t c = blockIdx.x;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n * area; i += blockDim.x)
    sum += widen(dy[((i / area) * channels + c) * area + i % area]);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = static_cast<float>(db[c] + partial[0]);
}

#undef PETRA_GRID_STRIDE

}  // namespace

void to_bf16(const float* x, uint16_t* out, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  to_bf16_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, out, count);
  check_launch("to_bf16");
}

void from_bf16(const uint16_t* x, const float* bias, float* y, int64_t n, int64_t channels, int64_t area,
               cudaStream_t stream) {
  const int64_t count = n * channels * area;
  if (count == 0) return;
  from_bf16_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, bias, y, channels, area, count);
  check_launch(bias ? "from_bf16 (with bias)" : "from_bf16");
}

void add_from_bf16(const uint16_t* x, float* acc, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  add_from_bf16_kernel<<<blocks_for(count), threads_per_block, 0, stream>>>(x, acc, count);
  check_launch("add_from_bf16");
}

void add_channel_sums_bf16(const uint16_t* dy, float* db, int64_t n, int64_t channels, int64_t area,
                           cudaStream_t stream) {
  if (channels == 0) return;
  add_channel_sums_bf16_kernel<<<static_cast<unsigned>(channels), threads_per_block, 0, stream>>>(
      dy, db, n, channels, area);
  check_launch("add_channel_sums_bf16");
}

}  // namespace petra::cuda::kernels
