// How two backends' results are compared: bit for bit, or by the norm-wise relative error within
// the tolerances of a GPU's fp32 and TF32 arithmetic; and seeded normal host tensors.
#pragma once

#include <doctest/doctest.h>

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

/// Same shape and the same bits (NaNs included), both on the host; two undefined tensors are equal.
inline bool bit_equal(const tensor& a, const tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.shape() == b.shape() && (a.numel() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

}  // namespace petra::testing
