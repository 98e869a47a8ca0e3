// CPU-versus-GPU helpers for the CUDA tests: a CPU backend and a deterministic, full-fp32 GPU
// backend side by side, and a GPU tensor's relative error against its CPU twin. The measures and
// tolerances are the op table's (tests/backends), which checks every op this way.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <vector>

#include "compute/backend.hpp"
#include "compute/blocks/block.hpp"
#include "compute/cuda/cuda_backend.hpp"
#include "tests/backends/parity_measures.hpp"
#include "tests/skip.hpp"

namespace petra::testing {

struct cpu_and_gpu {
  std::unique_ptr<backend> cpu = make_cpu_backend(1);
  std::unique_ptr<backend> gpu;
  explicit cpu_and_gpu(math_precision precision = math_precision::fp32)
      : gpu(make_cuda_backend(0, precision, /*deterministic=*/true)) {}
};

/// The relative error of a GPU tensor against its CPU twin.
inline double gpu_vs_cpu(backend& gpu, const tensor& on_gpu, const tensor& on_cpu) {
  REQUIRE(on_gpu.where().type == device_type::cuda);
  REQUIRE(on_cpu.where().type == device_type::cpu);
  return relative_error({gpu.to_host(on_gpu)}, {on_cpu});
}

/// Random host streams of shape `s` (x2 undefined where the shape has one stream).
inline activation random_pair(const activation_shape& s, std::mt19937& rng) {
  return {random_host(s.x1, rng), s.x2.empty() ? tensor{} : random_host(s.x2, rng)};
}

/// The streams uploaded to `gpu`.
inline activation to_gpu(backend& gpu, const activation& a) {
  return {gpu.from_host(a.x1), a.x2.defined() ? gpu.from_host(a.x2) : tensor{}};
}

/// The relative error of a GPU activation against its CPU twin, both streams.
inline double gap(backend& gpu, const activation& on_gpu, const activation& on_cpu) {
  REQUIRE(on_gpu.two_streams() == on_cpu.two_streams());
  if (!on_cpu.two_streams()) return relative_error({gpu.to_host(on_gpu.x1)}, {on_cpu.x1});
  return relative_error({gpu.to_host(on_gpu.x1), gpu.to_host(on_gpu.x2)}, {on_cpu.x1, on_cpu.x2});
}

/// The relative error of a GPU block's parameter gradients against its CPU twin's.
inline double gradient_gap(backend& gpu, block& on_gpu, block& on_cpu) {
  std::vector<tensor> a, b;
  for (parameter* p : on_gpu.parameters()) a.push_back(gpu.to_host(p->grad));
  for (parameter* p : on_cpu.parameters()) b.push_back(p->grad);
  return relative_error(a, b);
}

}  // namespace petra::testing
