// The tensor-core bf16 path's conversions: fp32 → bf16 buffers with the CPU's rounding, bf16
// results → fp32 (with a convolution's bias, or accumulated into a gradient). (The bias gradient
// from the bf16 copy of dy: channel_sums.cu.)
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

}  // namespace petra::cuda::kernels
