// NCHW ↔ NHWC copies (nhwc.hpp).
#include "compute/cpu/nhwc.hpp"

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>

#include "compute/cpu/parallel.hpp"

namespace petra::cpu {

namespace {

#ifdef __AVX2__
/// dst[j·ld_dst + i] = src[i·ld_src + j] for an 8 × 8 block.
void transpose8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld_src);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
#pragma GCC unroll 6
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ld_dst, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ld_dst, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

}  // namespace

void transpose(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t rows, int64_t cols) {
  int64_t i = 0;
#ifdef __AVX2__
  for (; i + 8 <= rows; i += 8) {
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) transpose8(src + i * ld_src + j, ld_src, dst + j * ld_dst + i, ld_dst);
    for (; j < cols; ++j)
      for (int64_t ii = i; ii < i + 8; ++ii) dst[j * ld_dst + ii] = src[ii * ld_src + j];
  }
#endif
  for (; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * ld_dst + i] = src[i * ld_src + j];
}

void to_padded_nhwc(const float* src, int64_t n, int64_t c, int64_t h, int64_t w, int64_t pad, int64_t rows,
                    int64_t cols, float* dst, int threads) {
  const int team = team_for(n * rows * cols * c, threads);
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
  for (int64_t item = 0; item < n * rows; ++item) {
    const int64_t b = item / rows, i = item % rows, hi = i - pad;
    float* out = dst + item * cols * c;
    if (hi < 0 || hi >= h) {
      std::memset(out, 0, sizeof(float) * static_cast<std::size_t>(cols * c));
      continue;
    }
    const int64_t left = std::min(pad, cols), right = std::max<int64_t>(0, std::min(cols, pad + w));
    std::memset(out, 0, sizeof(float) * static_cast<std::size_t>(left * c));
    if (right > left) transpose(src + b * c * h * w + hi * w, h * w, out + left * c, c, c, right - left);
    if (cols > right)
      std::memset(out + right * c, 0, sizeof(float) * static_cast<std::size_t>((cols - right) * c));
  }
}

}  // namespace petra::cpu
