// Standard normal draws, counter-based: pair k of a stream keyed by `key` (its values 2k and
// 2k + 1) is a function of (key, k) alone: one 64-bit hash gives its two uniforms (24 bits each, in
// (0, 1)), Box–Muller in float. No state passes from one pair to the next, so any thread or GPU
// kernel may draw any pair: the host (backend::gaussian's default and the CPU backend) and the CUDA
// kernel (compute/cuda/kernels.cu) share this formula, and a GPU's draws equal the CPU's up to its
// float log, sin and cos (a few units in the last place).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define PETRA_HOST_DEVICE __host__ __device__
#else
#define PETRA_HOST_DEVICE
#endif

namespace petra {

/// SplitMix64's output for the state `x` + its increment.
PETRA_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Pair k of the stream `key`: two independent standard normal values.
PETRA_HOST_DEVICE inline void gaussian_pair(uint64_t key, int64_t k, float& first, float& second) {
  const uint64_t bits = splitmix64(key + static_cast<uint64_t>(k) * 0xda942042e4dd58b5ULL);
  constexpr float scale = 1.0f / 16777216.0f;
  const float u1 = (static_cast<float>(bits >> 40) + 0.5f) * scale;
  const float u2 = (static_cast<float>((bits >> 16) & 0xffffffULL) + 0.5f) * scale;
  const float r = sqrtf(-2.0f * logf(u1));
  const float angle = 6.2831853f * u2;
  first = r * cosf(angle);
  second = r * sinf(angle);
}

/// x[0, n) ← the first n values of the stream `key`.
inline void fill_gaussian(float* x, int64_t n, uint64_t key) {
  for (int64_t k = 0; 2 * k < n; ++k) {
    float first, second;
    gaussian_pair(key, k, first, second);
    x[2 * k] = first;
    if (2 * k + 1 < n) x[2 * k + 1] = second;
  }
}

}  // namespace petra
