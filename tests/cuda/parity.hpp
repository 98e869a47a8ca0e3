// CPU-versus-GPU parity helpers for the CUDA tests: a CPU backend and a deterministic, full-fp32
// GPU backend side by side, random host tensors, and the norm-wise relative error.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/cuda/cuda_backend.hpp"
#include "tests/skip.hpp"

namespace petra::testing {

/// fp32 parity bound for single ops (TF32 off, deterministic algorithms).
constexpr double op_tolerance = 1e-4;
/// TF32 convolutions and GEMMs round their inputs to a 10-bit mantissa (≈ 5e-4 relative per
/// product); norm-wise errors of a few 1e-3 are expected.
constexpr double tf32_tolerance = 5e-3;

struct cpu_and_gpu {
  std::unique_ptr<backend> cpu = make_cpu_backend(1);
  std::unique_ptr<backend> gpu;
  explicit cpu_and_gpu(bool tf32 = false) : gpu(make_cuda_backend(0, tf32, /*deterministic=*/true)) {}
};

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

/// The relative error of a GPU tensor against its CPU twin.
inline double gpu_vs_cpu(backend& gpu, const tensor& on_gpu, const tensor& on_cpu) {
  REQUIRE(on_gpu.where().type == device_type::cuda);
  REQUIRE(on_cpu.where().type == device_type::cpu);
  return relative_error({gpu.to_host(on_gpu)}, {on_cpu});
}

inline bool bit_equal(const tensor& a, const tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.data()[i] != b.data()[i]) return false;
  return true;
}

}  // namespace petra::testing
