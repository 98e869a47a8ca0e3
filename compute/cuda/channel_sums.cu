// Per-channel sums over (n, area) in a fixed order: pass 1 sums each (channel, slice) in a block
// (each thread a strided share, then a tree in shared memory), pass 2 adds each channel's slices
// in slice order to db.
#include <algorithm>

#include "compute/cuda/channel_sums.hpp"
#include "compute/cuda/checks.hpp"
#include "compute/cuda/launch.cuh"

namespace petra::cuda::kernels {

namespace {

constexpr int64_t values_per_slice = 4096;
constexpr int64_t max_slices = 256;
constexpr int64_t max_grid_extent = 65535;

__device__ inline float value_at(const float* p, int64_t i) { return p[i]; }
__device__ inline float value_at(const uint16_t* p, int64_t i) {
  return __uint_as_float(static_cast<unsigned>(p[i]) << 16);
}

/// Block (x, y) sums slice x of channel y (striding when the grid is smaller than either): the
/// block's threads and the tree are fixed, so each partial sum is too.
template <typename T>
__global__ void channel_partial_sums_kernel(const T* dy, double* partial, int64_t n, int64_t channels,
                                            int64_t area, int64_t slices) {
  __shared__ double shared[threads_per_block];
  const int64_t values = n * area;
  for (int64_t c = blockIdx.y; c < channels; c += gridDim.y)
    for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
      const int64_t begin = values * s / slices, end = values * (s + 1) / slices;
      double sum = 0;
      for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x)
        sum += value_at(dy, ((j / area) * channels + c) * area + j % area);
      shared[threadIdx.x] = sum;
      __syncthreads();
      for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
      }
      if (threadIdx.x == 0) partial[c * slices + s] = shared[0];
      __syncthreads();  // `shared` is written again for the block's next (channel, slice)
    }
}

__global__ void add_slice_sums_kernel(const double* partial, float* db, int64_t channels, int64_t slices) {
  PETRA_GRID_STRIDE(c, channels) {
    double sum = 0;
    for (int64_t s = 0; s < slices; ++s) sum += partial[c * slices + s];
    db[c] = static_cast<float>(db[c] + sum);
  }
}

#undef PETRA_GRID_STRIDE

template <typename T>
void launch(const T* dy, float* db, int64_t n, int64_t channels, int64_t area, double* partial,
            cudaStream_t stream, const char* name) {
  if (channels == 0) return;
  const int64_t slices = channel_sum_slices(n, area);
  const dim3 grid(static_cast<unsigned>(std::min(slices, max_grid_extent)),
                  static_cast<unsigned>(std::min(channels, max_grid_extent)));
  channel_partial_sums_kernel<T>
      <<<grid, threads_per_block, 0, stream>>>(dy, partial, n, channels, area, slices);
  check_launch(name);
  add_slice_sums_kernel<<<blocks_for(channels), threads_per_block, 0, stream>>>(partial, db, channels,
                                                                                slices);
  check_launch(name);
}

}  // namespace

int64_t channel_sum_slices(int64_t n, int64_t area) {
  return std::clamp<int64_t>((n * area + values_per_slice - 1) / values_per_slice, 1, max_slices);
}

void add_channel_sums(const float* dy, float* db, int64_t n, int64_t channels, int64_t area, double* partial,
                      cudaStream_t stream) {
  launch(dy, db, n, channels, area, partial, stream, "add_channel_sums");
}

void add_channel_sums_bf16(const uint16_t* dy, float* db, int64_t n, int64_t channels, int64_t area,
                           double* partial, cudaStream_t stream) {
  launch(dy, db, n, channels, area, partial, stream, "add_channel_sums_bf16");
}

}  // namespace petra::cuda::kernels
