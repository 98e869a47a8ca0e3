// What the op table (tests/backends) does not ask of every backend: the CUDA backend runs from any
// thread, keeps one plan per convolution shape with bit-identical repeats, and refuses host
// tensors and bad shapes with the CPU's messages.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <thread>

#include "compute/cuda/cuda_backend_impl.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("the backend runs from any thread (it makes its GPU current first)") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(11);
  const tensor x = random_host({64}, rng);
  tensor on_thread;
  std::thread worker([&] { on_thread = be.gpu->to_host(be.gpu->relu_forward(be.gpu->from_host(x))); });
  worker.join();
  CHECK(bit_equal(on_thread, be.cpu->relu_forward(x)));
}

TEST_CASE("deterministic backend: one plan per shape, and repeated backward passes are bit-identical") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(3);
  const shape_t x_shape{4, 8, 8, 8}, w_shape{16, 8, 3, 3};
  const conv2d_params p{2, 1};
  const tensor xg = be.gpu->from_host(random_host(x_shape, rng)),
               wg = be.gpu->from_host(random_host(w_shape, rng));
  const tensor yg = be.gpu->conv2d_forward(xg, wg, {}, p);
  auto& gpu = dynamic_cast<cuda_backend&>(*be.gpu);
  CHECK(gpu.conv_plans() == 1);
  be.gpu->conv2d_forward(xg, wg, {}, p);
  CHECK(gpu.conv_plans() == 1);  // descriptors and algorithms chosen once per shape
  const tensor dyg = be.gpu->from_host(random_host(yg.shape(), rng));
  std::vector<tensor> dx, dw;
  for (int run = 0; run < 2; ++run) {
    dx.push_back(be.gpu->to_host(be.gpu->conv2d_backward_data(dyg, wg, x_shape, p)));
    tensor g = be.gpu->zeros(w_shape);
    tensor no_bias;
    be.gpu->conv2d_backward_filter(xg, dyg, p, g, no_bias);
    dw.push_back(be.gpu->to_host(g));
  }
  CHECK(bit_equal(dx[0], dx[1]));
  CHECK(bit_equal(dw[0], dw[1]));
}

TEST_CASE("GPU ops reject host tensors, bad shapes and bad labels with the CPU twin's messages") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  const tensor host = tensor::zeros({2, 3, 4, 4});
  CHECK_THROWS_WITH_AS(be.gpu->relu_forward(host), doctest::Contains("lives on cpu"), std::invalid_argument);
  const tensor x = be.gpu->zeros({2, 3, 4, 4}), w = be.gpu->zeros({5, 4, 3, 3});
  CHECK_THROWS_WITH_AS(be.gpu->conv2d_forward(x, w, {}, {1, 1}), doctest::Contains("has 3 channels but w"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(be.gpu->split_channels(be.gpu->zeros({2, 3, 4, 4})), doctest::Contains("even number"),
                       std::invalid_argument);
  const std::vector<int32_t> bad{0, 10};
  CHECK_THROWS_WITH_AS(be.gpu->softmax_cross_entropy(be.gpu->zeros({2, 10}), bad, nullptr, nullptr),
                       doctest::Contains("labels[1] = 10 is outside [0, 10)"), std::invalid_argument);
}

// The random guesses' draw (compute/gaussian.hpp) on the GPU: the same pairs from the same
// counters, through CUDA's logf (1 ulp), sinf and cosf (2 ulp each; the CUDA C++ Programming Guide's
// bounds, no fast-math) where the CPU uses glibc's (≤ 1 ulp). A value r·cos(θ) with r ≤ 5.9 (the
// smallest uniform is 2^-25) then differs by at most about 6 · 3 ulp(1) + |value| · 2 ulp ≈ 2.2e-6
// + 2.4e-7·|value|: the bound below is 4e-6·(1 + |value|).
TEST_CASE("GPU gaussian draws equal the CPU's to a few ulps, odd counts included") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  for (const shape_t& shape : {shape_t{3, 5, 7, 9}, shape_t{64, 16, 28, 28}}) {
    CAPTURE(shape.size());
    const uint64_t key = 0x5deece66dULL;
    const tensor cpu = be.cpu->gaussian(shape, key);
    const tensor gpu = be.gpu->to_host(be.gpu->gaussian(shape, key));
    REQUIRE(gpu.shape() == cpu.shape());
    int64_t beyond = 0, equal = 0;
    double worst = 0;
    for (int64_t i = 0; i < cpu.numel(); ++i) {
      const double d = std::abs(static_cast<double>(gpu.data()[i]) - cpu.data()[i]);
      beyond += d > 4e-6 * (1.0 + std::abs(cpu.data()[i]));
      equal += d == 0;
      worst = std::max(worst, d);
    }
    MESSAGE("gaussian on the GPU: " << equal << " of " << cpu.numel()
                                    << " values bit-equal, largest difference " << worst);
    CHECK(beyond == 0);  // other pairs than the CPU's would differ by O(1)
  }
  CHECK(be.gpu->gaussian({0}, 1).numel() == 0);
}
