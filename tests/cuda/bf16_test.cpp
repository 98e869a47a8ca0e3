// The CUDA backend in bf16 (tensor cores) and bf16_emulated, beyond the op table's bf16 columns
// (tests/backends): its rounding of the operands is the CPU's bit for bit, and a coupling's
// rebuild errs as little as in fp32 (storage stays fp32), under the CPU bf16 test's bound.
#include <doctest/doctest.h>

#include <random>

#include "compute/blocks/coupling.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

const math_precision gpu_precisions[] = {math_precision::bf16, math_precision::bf16_emulated};

}  // namespace

TEST_CASE("cuda bf16: operands are rounded as the CPU rounds them, bit for bit") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  auto cpu = make_cpu_backend(1, math_precision::bf16_emulated);
  std::mt19937 rng(17);
  // x·1 is bf16(x) exactly, through a GEMM and through a 1×1 convolution with the identity as its
  // weight (the sum of one product and zeros is exact; a bf16 output keeps a bf16 value as it is).
  tensor x = random_host({4096, 1}, rng, 100.f);
  const float ulp_at_one = 1.f / 128;
  const float ties[] = {1.f + ulp_at_one / 2, 1.f + 1.5f * ulp_at_one, -(1.f + ulp_at_one / 2)};
  for (int i = 0; i < 3; ++i) x.data()[i] = ties[i];
  tensor one = tensor::empty({1, 1});
  one.data()[0] = 1.f;
  const tensor planes = random_host({64, 8, 4, 4}, rng, 100.f);
  tensor identity = tensor::zeros({8, 8, 1, 1});
  for (int c = 0; c < 8; ++c) identity.data()[c * 8 + c] = 1.f;
  for (math_precision precision : gpu_precisions) {
    INFO(to_string(precision));
    auto gpu = make_cuda_backend(0, precision, /*deterministic=*/true);
    const tensor by_gemm =
        gpu->to_host(gpu->linear_forward(gpu->from_host(x), gpu->from_host(one), tensor{}));
    CHECK(bit_equal(by_gemm, cpu->linear_forward(x, one, tensor{})));
    const tensor by_conv =
        gpu->to_host(gpu->conv2d_forward(gpu->from_host(planes), gpu->from_host(identity), tensor{}, {1, 0}));
    CHECK(bit_equal(by_conv, cpu->conv2d_forward(planes, identity, tensor{}, {1, 0})));
  }
}

// As tests/backends/bf16_inversion_test.cpp on the CPU: three couplings forward, then each
// inverted from its exact output; F is recomputed from the same fp32 input with the same weights
// and deterministic algorithms, its bits repeat and its bf16 rounding cancels.
TEST_CASE("cuda bf16: the rebuild of a 3-coupling stage errs under the CPU bf16 bound (1e-6) per block") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  for (math_precision precision : gpu_precisions)
    for (bool bottleneck : {false, true}) {
      auto gpu = make_cuda_backend(0, precision, /*deterministic=*/true);
      std::mt19937 rng(11);
      std::vector<std::unique_ptr<coupling_block>> blocks;
      for (uint64_t b = 0; b < 3; ++b)
        blocks.push_back(std::make_unique<coupling_block>(
            *gpu, "c" + std::to_string(b),
            bottleneck ? conv_chain::bottleneck(8, 4, 8, 1) : conv_chain::basic(8), 30 + b));
      std::vector<activation> inputs{
          {gpu->from_host(random_host({8, 8, 6, 6}, rng)), gpu->from_host(random_host({8, 8, 6, 6}, rng))}};
      for (auto& block : blocks) inputs.push_back(block->forward(inputs.back(), pass::train, nullptr));
      for (std::size_t b = blocks.size(); b-- > 0;) {
        const activation back = blocks[b]->inverse(inputs[b + 1]);
        const double error = gpu_vs_cpu(*gpu, back.x2, gpu->to_host(inputs[b].x2));
        INFO(to_string(precision) << (bottleneck ? ", bottleneck F" : ", basic F") << ", block " << b
                                  << ": relative inversion error of x2 " << error << ", bound 1e-6");
        CHECK(error < 1e-6);
      }
    }
}
