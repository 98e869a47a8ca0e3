// Launchers of the kernels around the tensor-core bf16 path (bf16_kernels.cu): fp32 tensors to
// bf16 buffers (2 bytes per element, the upper half of an fp32's bits) and bf16 results back into
// fp32. Each enqueues on `stream` and checks its launch; pointers are device pointers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace petra::cuda::kernels {

/// out[i] = bf16(x[i]): round_to_bf16's rounding (ties to even, NaN stays NaN), 16 bits kept.
void to_bf16(const float* x, uint16_t* out, int64_t count, cudaStream_t stream);

/// y[n, c, i] = fp32(x[n, c, i]) + bias[c] (bias may be null: + 0) over (n, channels, area); the
/// fp32 sum is the one cudnnAddTensor forms.
void from_bf16(const uint16_t* x, const float* bias, float* y, int64_t n, int64_t channels, int64_t area,
               cudaStream_t stream);

/// acc[i] += fp32(x[i]): parameter gradients accumulate in fp32.
void add_from_bf16(const uint16_t* x, float* acc, int64_t count, cudaStream_t stream);

}  // namespace petra::cuda::kernels
