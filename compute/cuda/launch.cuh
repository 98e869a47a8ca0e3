// How the backend's elementwise kernels are launched: a fixed block size, a capped grid, and a
// grid-stride loop over whatever the grid does not cover.
#pragma once

#include <cstdint>

namespace petra::cuda::kernels {

constexpr int threads_per_block = 256;

/// Enough blocks for `count` threads, capped: the kernels stride over the rest.
inline unsigned blocks_for(int64_t count) {
  const int64_t blocks = (count + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

}  // namespace petra::cuda::kernels

#define PETRA_GRID_STRIDE(i, count)                                                          \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
