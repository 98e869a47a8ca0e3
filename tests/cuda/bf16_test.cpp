// The CUDA backend in bf16, beyond the op table's bf16 column (tests/backends): its rounding is the
// CPU's bit for bit, and a coupling's rebuild errs as little as in fp32 (storage stays fp32).
#include <doctest/doctest.h>

#include <random>

#include "compute/blocks/coupling.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("cuda bf16: operands are rounded as the CPU rounds them, bit for bit") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  // x·1 is bf16(x) exactly, on the GPU (fp32 GEMM of rounded operands) as on the CPU.
  auto gpu = make_cuda_backend(0, math_precision::bf16, /*deterministic=*/true);
  auto cpu = make_cpu_backend(1, math_precision::bf16_emulated);
  std::mt19937 rng(17);
  const tensor x = random_host({4096, 1}, rng, 100.f);
  tensor one = tensor::empty({1, 1});
  one.data()[0] = 1.f;
  const tensor on_gpu = gpu->to_host(gpu->linear_forward(gpu->from_host(x), gpu->from_host(one), tensor{}));
  CHECK(bit_equal(on_gpu, cpu->linear_forward(x, one, tensor{})));
}

TEST_CASE("cuda bf16: a coupling's inverse rebuilds its input at fp32 round-off") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  auto gpu = make_cuda_backend(0, math_precision::bf16, /*deterministic=*/true);
  std::mt19937 rng(5);
  for (bool bottleneck : {false, true}) {
    coupling_block c(*gpu, "c", bottleneck ? conv_chain::bottleneck(8, 4, 8, 1) : conv_chain::basic(8), 21);
    const activation x{gpu->from_host(random_host({8, 8, 6, 6}, rng)),
                       gpu->from_host(random_host({8, 8, 6, 6}, rng))};
    const activation back = c.inverse(c.forward(x, pass::train, nullptr));
    INFO((bottleneck ? "bottleneck F" : "basic F"));
    CHECK(gpu_vs_cpu(*gpu, back.x2, gpu->to_host(x.x2)) < 1e-6);
  }
}
