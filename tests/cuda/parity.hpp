// CPU-versus-GPU helpers for the CUDA tests: a CPU backend and a deterministic, full-fp32 GPU
// backend side by side, and a GPU tensor's relative error against its CPU twin. The measures and
// tolerances are the op table's (tests/backends), which checks every op this way.
#pragma once

#include <doctest/doctest.h>

#include <memory>

#include "compute/backend.hpp"
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

}  // namespace petra::testing
