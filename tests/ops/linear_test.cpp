// The linear layer on the CPU backend: hand values, finite differences, accumulation.
#include <doctest/doctest.h>

#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("linear_forward computes x·wᵀ + b") {
  auto cpu = make_cpu_backend(1);
  const tensor x = tensor::from_vector({2, 3}, {1, 2, 3, -1, 0, 1});
  const tensor w = tensor::from_vector({2, 3}, {1, 0, -1, 2, 1, 0});
  const tensor b = tensor::from_vector({2}, {0.5f, -1.f});
  CHECK(cpu->linear_forward(x, w, b).to_vector() == std::vector<float>{-1.5f, 3.f, -1.5f, -3.f});
  CHECK(cpu->linear_forward(x, w, tensor()).to_vector() == std::vector<float>{-2.f, 4.f, -2.f, -2.f});
}

TEST_CASE("linear gradients match finite differences and weight gradients accumulate") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(14);
  tensor x = random_tensor({5, 7}, rng), w = random_tensor({3, 7}, rng), b = random_tensor({3}, rng);
  const tensor probe = random_tensor({5, 3}, rng);
  auto loss = [&] { return dot(probe, cpu->linear_forward(x, w, b)); };
  const tensor dx = cpu->linear_backward_data(probe, w);
  const tensor dw_start = random_tensor({3, 7}, rng), db_start = random_tensor({3}, rng);
  tensor dw = dw_start.clone(), db = db_start.clone();
  cpu->linear_backward_weight(x, probe, dw, db);
  CHECK(scaled_error(dx, numeric_gradient(x, 1e-2f, loss)) < 2e-3);
  CHECK(scaled_error(difference(dw, dw_start), numeric_gradient(w, 1e-2f, loss)) < 2e-3);
  CHECK(scaled_error(difference(db, db_start), numeric_gradient(b, 1e-2f, loss)) < 2e-3);
}

TEST_CASE("linear preconditions") {
  auto cpu = make_cpu_backend(1);
  CHECK_THROWS_WITH_AS(cpu->linear_forward(tensor::zeros({4, 5}), tensor::zeros({3, 6}), tensor()),
                       "linear_forward: x (4, 5) has 5 features but w (3, 6) expects 6",
                       std::invalid_argument);
  CHECK_THROWS_AS(cpu->linear_forward(tensor::zeros({4, 5}), tensor::zeros({3, 5}), tensor::zeros({4})),
                  std::invalid_argument);
  CHECK_THROWS_AS(cpu->linear_backward_data(tensor::zeros({4, 2}), tensor::zeros({3, 5})),
                  std::invalid_argument);
  tensor dw = tensor::zeros({3, 4}), db = tensor::zeros({3});
  CHECK_THROWS_WITH_AS(cpu->linear_backward_weight(tensor::zeros({4, 5}), tensor::zeros({4, 3}), dw, db),
                       doctest::Contains("dw (3, 4) must be (O, I) = (3, 5)"), std::invalid_argument);
}
