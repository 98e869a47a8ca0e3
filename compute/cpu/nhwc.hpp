// Copies between NCHW and channels-last (NHWC) buffers of fp32, for kernels that read channels
// contiguously (compute/cpu/winograd.cpp).
#pragma once

#include <cstdint>

namespace petra::cpu {

/// dst[j·ld_dst + i] = src[i·ld_src + j] for i < rows, j < cols (8 × 8 AVX2 blocks where built for it).
void transpose(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows, int64_t cols);

/// dst (n, rows, cols, c) = src (n, c, h, w) shifted by `pad` rows and columns, zero outside it, on up
/// to `threads` threads.
void to_padded_nhwc(const float* src, int64_t n, int64_t c, int64_t h, int64_t w, int64_t pad, int64_t rows,
                    int64_t cols, float* dst, int threads);

}  // namespace petra::cpu
