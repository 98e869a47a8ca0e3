// 2×2 max pool and global average pool on the CPU backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("max_pool2x2 takes each window's maximum and routes dy to it") {
  auto cpu = make_cpu_backend(1);
  // One 4×4 plane; windows {1,5,2,0}, {3,3,7,-1}, {-4,-2,-3,-9}, {8,6,8,0}.
  const tensor x = tensor::from_vector({1, 1, 4, 4}, {1, 5, 3, 3,    //
                                                      2, 0, 7, -1,   //
                                                      -4, -2, 8, 6,  //
                                                      -3, -9, 8, 0});
  CHECK(cpu->max_pool2x2_forward(x).to_vector() == std::vector<float>{5, 7, -2, 8});
  const tensor dy = tensor::from_vector({1, 1, 2, 2}, {10, 20, 30, 40});
  // A tie (the two 8s) goes to the first in row-major order, as PyTorch does.
  CHECK(cpu->max_pool2x2_backward(x, dy).to_vector() == std::vector<float>{0, 10, 0, 0,   //
                                                                           0, 0, 20, 0,   //
                                                                           0, 30, 40, 0,  //
                                                                           0, 0, 0, 0});
}

TEST_CASE("max_pool2x2_backward matches finite differences") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(12);
  tensor x = random_tensor({2, 3, 6, 8}, rng);
  // Distinct values at least 0.01 apart: a ±1e-3 step never changes a window's winner.
  std::vector<int> order(static_cast<std::size_t>(x.numel()));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t i = 0; i < order.size(); ++i) x.data()[i] = 0.01f * order[i];
  const tensor probe = random_tensor(cpu->max_pool2x2_forward(x).shape(), rng);
  const tensor dx = cpu->max_pool2x2_backward(x, probe);
  CHECK(scaled_error(
            dx, numeric_gradient(x, 1e-3f, [&] { return dot(probe, cpu->max_pool2x2_forward(x)); })) < 5e-3);
}

TEST_CASE("global_avg_pool averages each plane and its backward spreads dy evenly") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(13);
  tensor x = random_tensor({3, 4, 5, 6}, rng);
  const tensor y = cpu->global_avg_pool_forward(x);
  REQUIRE(y.shape() == shape_t{3, 4});
  for (int64_t plane = 0; plane < 12; ++plane) {
    double sum = 0;
    for (int64_t i = 0; i < 30; ++i) sum += x.data()[plane * 30 + i];
    CHECK(y.data()[plane] == doctest::Approx(sum / 30).epsilon(1e-6));
  }
  const tensor probe = random_tensor(y.shape(), rng);
  const tensor dx = cpu->global_avg_pool_backward(probe, x.shape());
  CHECK(scaled_error(dx, numeric_gradient(
                             x, 1e-2f, [&] { return dot(probe, cpu->global_avg_pool_forward(x)); })) < 2e-3);
}

TEST_CASE("pooling preconditions") {
  auto cpu = make_cpu_backend(1);
  CHECK_THROWS_WITH_AS(cpu->max_pool2x2_forward(tensor::zeros({1, 2, 5, 4})),
                       doctest::Contains("x (1, 2, 5, 4) has an odd height or width"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->max_pool2x2_backward(tensor::zeros({1, 2, 4, 4}), tensor::zeros({1, 2, 4, 4})),
                       doctest::Contains("dy (1, 2, 4, 4) is not the pooled shape of x (1, 2, 4, 4)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->global_avg_pool_backward(tensor::zeros({2, 3}), {2, 4, 5, 5}),
                       doctest::Contains("does not match x_shape (2, 4, 5, 5)"), std::invalid_argument);
}
