// A convolution's bias gradient: per-channel sums of dy over (n, area), by every SM of the GPU in a
// fixed order (channel_sums.cu): each channel's values cut into slices, one block per (channel,
// slice), then each channel's slices summed in order. No atomics: the same bits at every run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace petra::cuda::kernels {

/// The slices a channel's n·area values are summed in: about 4096 values each, 1 to 256. A function
/// of the shape only, so the order of the sums (and their bits) is the same on every GPU.
int64_t channel_sum_slices(int64_t n, int64_t area);

/// db[c] += Σ_{n,i} dy[n, c, i] over (n, channels, area), in double; `partial`: device scratch
/// for channels · channel_sum_slices(n, area) doubles.
void add_channel_sums(const float* dy, float* db, int64_t n, int64_t channels, int64_t area, double* partial,
                      cudaStream_t stream);

/// The same over bf16 values (the upper halves of fp32s), widened exactly to fp32 first.
void add_channel_sums_bf16(const uint16_t* dy, float* db, int64_t n, int64_t channels, int64_t area,
                           double* partial, cudaStream_t stream);

}  // namespace petra::cuda::kernels
