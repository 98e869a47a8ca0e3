// ReLU, add, sub and add_inplace on the CPU backend.
#include <doctest/doctest.h>

#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("relu_forward clamps negatives and relu_backward passes dy where y > 0") {
  auto cpu = make_cpu_backend(1);
  const tensor x = tensor::from_vector({2, 3}, {-2.f, -0.f, 0.5f, 3.f, -1e-6f, 1e-6f});
  const tensor y = cpu->relu_forward(x);
  CHECK(y.to_vector() == std::vector<float>{0.f, 0.f, 0.5f, 3.f, 0.f, 1e-6f});
  const tensor dy = tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(cpu->relu_backward(y, dy).to_vector() == std::vector<float>{0, 0, 3, 4, 0, 6});
}

TEST_CASE("relu_backward matches finite differences away from the kink") {
  auto cpu = make_cpu_backend(1);
  std::mt19937 rng(8);
  tensor x = random_tensor({2, 3, 4, 4}, rng);
  for (int64_t i = 0; i < x.numel(); ++i)  // keep |x| ≥ 0.1 so x ± eps stays on one side
    x.data()[i] += x.data()[i] >= 0 ? 0.1f : -0.1f;
  const tensor probe = random_tensor(x.shape(), rng);
  const tensor dx = cpu->relu_backward(cpu->relu_forward(x), probe);
  CHECK(scaled_error(dx, numeric_gradient(x, 1e-2f, [&] { return dot(probe, cpu->relu_forward(x)); })) <
        1e-3);
}

TEST_CASE("add, sub and add_inplace are elementwise on large tensors too") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(9);
  const tensor a = random_tensor({4, 16, 32, 32}, rng), b = random_tensor({4, 16, 32, 32}, rng);
  const tensor sum = cpu->add(a, b), difference = cpu->sub(a, b);
  tensor accumulated = a.clone();
  cpu->add_inplace(accumulated, b);
  bool all_match = true;
  for (int64_t i = 0; i < a.numel(); ++i)
    all_match = all_match && sum.data()[i] == a.data()[i] + b.data()[i] &&
                difference.data()[i] == a.data()[i] - b.data()[i] && accumulated.data()[i] == sum.data()[i];
  CHECK(all_match);
  CHECK_FALSE(sum.shares_storage_with(a));
}

TEST_CASE("pointwise ops reject mismatched shapes") {
  auto cpu = make_cpu_backend(1);
  tensor a = tensor::zeros({2, 3});
  CHECK_THROWS_WITH_AS(cpu->add(a, tensor::zeros({3, 2})),
                       "add: a (2, 3) and b (3, 2) must have the same shape", std::invalid_argument);
  CHECK_THROWS_AS(cpu->sub(a, tensor::zeros({6})), std::invalid_argument);
  CHECK_THROWS_AS(cpu->add_inplace(a, tensor::zeros({2, 4})), std::invalid_argument);
  CHECK_THROWS_AS(cpu->relu_backward(a, tensor::zeros({2, 2})), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->relu_forward(tensor()), doctest::Contains("x is undefined"),
                       std::invalid_argument);
}
