// How two backends' results are compared: bit for bit, by the norm-wise relative error within
// the tolerances of a GPU's fp32 and TF32 arithmetic, or elementwise within the bf16 bound; and
// seeded normal host tensors.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "compute/tensor.hpp"

namespace petra::testing {

/// fp32 parity bound for single ops on a GPU (TF32 off, deterministic algorithms).
constexpr double op_tolerance = 1e-4;
/// TF32 convolutions and GEMMs round their inputs to a 10-bit mantissa (≈ 5e-4 relative per
/// product); norm-wise errors of a few 1e-3 are expected.
constexpr double tf32_tolerance = 5e-3;

/// bf16 operands, elementwise: bf16(a)·bf16(b) = a·b·(1 + δ₁)(1 + δ₂) with |δᵢ| ≤ u = 2^-8 (8
/// significant bits, rounding to nearest), and that product is exact in fp32 (8 + 8 ≤ 24 bits). A
/// sum of n such products, accumulated in fp32 in any order, is then within
/// (2u + u² + 2γₙ)·Σ|aᵢbᵢ| of the fp32 reference's, γₙ = n·2^-24/(1 − n·2^-24) bounding each side's
/// fp32 accumulation. The table's longest sum has n = 1024 (linear, I = 1024): this factor holds
/// for every case. Σ|aᵢbᵢ| is the case run in fp32 on |inputs|, which adds |the initial gradient|
/// where a result accumulates (looser, still a bound). (bf16 hardware flushes subnormals: none of
/// the table's normal draws comes near 2^-126.)
constexpr double bf16_fp32_gamma = (1024.0 / (1 << 24)) / (1 - 1024.0 / (1 << 24));
constexpr double bf16_bound_factor = 2.0 / 256 + 1.0 / 65536 + 2 * bf16_fp32_gamma;
/// A GPU's bf16 on tensor cores (compute/cuda/conv2d_bf16.cpp): cuDNN also writes a convolution's
/// result in bf16, one more rounding ≤ u of |ŝ| ≤ (1 + 3u)·Σ|aᵢbᵢ|; and tensor cores sum their
/// products in blocks whose fp32 adders align to the block's largest term and truncate: for k
/// products and the accumulator ≤ (k + 1)·2^-23 of the block's magnitudes, ≤ 2^-22 per product,
/// γ'ₙ = n·2^-22/(1 − n·2^-22) for the GPU's side. Together (2u + u²) + u(1 + 3u) + γ'ₙ(1 + 3u) +
/// γₙ ≤ 3u + 4u² + 2γ'ₙ.
constexpr double bf16_tensor_core_gamma = (1024.0 / (1 << 22)) / (1 - 1024.0 / (1 << 22));
constexpr double bf16_tensor_core_bound_factor = 3.0 / 256 + 4.0 / 65536 + 2 * bf16_tensor_core_gamma;

inline tensor random_host(const shape_t& shape, std::mt19937& rng, float scale = 1.f) {
  std::normal_distribution<float> normal(0.f, scale);
  tensor t = tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = normal(rng);
  return t;
}

/// ‖a − b‖ / ‖b‖ over all pairs together (b the CPU reference), both on the host.
inline double relative_error(const std::vector<tensor>& a, const std::vector<tensor>& b) {
  double diff = 0, norm = 0;
  REQUIRE(a.size() == b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    REQUIRE(a[k].shape() == b[k].shape());
    for (int64_t i = 0; i < a[k].numel(); ++i) {
      const double d = static_cast<double>(a[k].data()[i]) - b[k].data()[i];
      diff += d * d;
      norm += static_cast<double>(b[k].data()[i]) * b[k].data()[i];
    }
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

/// The largest |a − b| / (factor · magnitude) over the elements (≤ 1: within the bf16 bound); all
/// three on the host, of one shape.
inline double bf16_bound_ratio(const tensor& a, const tensor& b, const tensor& magnitude,
                               double factor = bf16_bound_factor) {
  REQUIRE(a.shape() == b.shape());
  REQUIRE(magnitude.shape() == b.shape());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double error = std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]);
    const double bound = factor * magnitude.data()[i];
    if (error == 0) continue;
    worst = std::max(worst, bound > 0 ? error / bound : HUGE_VAL);
  }
  return worst;
}

/// Same shape and the same bits (NaNs included), both on the host; two undefined tensors are equal.
inline bool bit_equal(const tensor& a, const tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.shape() == b.shape() && (a.numel() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

}  // namespace petra::testing
