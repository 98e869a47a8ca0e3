// Softmax cross-entropy on the CPU backend: hand values, stability, gradient, label checks.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("softmax_cross_entropy: mean loss, (softmax − onehot)/N and argmax hits") {
  auto cpu = make_cpu_backend(1);
  const tensor logits = tensor::from_vector({2, 3}, {1, 2, 3, 3, 1, 0});
  const std::vector<int32_t> labels{2, 1};  // row 0 is a hit, row 1 a miss
  tensor dlogits;
  int64_t correct = -1;
  const float loss = cpu->softmax_cross_entropy(logits, labels, &dlogits, &correct);

  const double z0 = std::exp(1.0) + std::exp(2.0) + std::exp(3.0), z1 = std::exp(3.0) + std::exp(1.0) + 1.0;
  CHECK(loss == doctest::Approx(((std::log(z0) - 3) + (std::log(z1) - 1)) / 2).epsilon(1e-6));
  CHECK(correct == 1);
  const double expected[6] = {std::exp(1.0) / z0 / 2,       std::exp(2.0) / z0 / 2,
                              (std::exp(3.0) / z0 - 1) / 2, std::exp(3.0) / z1 / 2,
                              (std::exp(1.0) / z1 - 1) / 2, 1.0 / z1 / 2};
  for (int i = 0; i < 6; ++i) CHECK(dlogits.data()[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  // Optional outputs may be left out.
  CHECK(cpu->softmax_cross_entropy(logits, labels, nullptr, nullptr) == loss);
}

TEST_CASE("softmax_cross_entropy is stable for large logits and its gradient matches differences") {
  auto cpu = make_cpu_backend(1);
  const tensor huge = tensor::from_vector({1, 3}, {1000.f, 1001.f, 990.f});
  tensor dhuge;
  const float loss = cpu->softmax_cross_entropy(huge, {0}, &dhuge, nullptr);
  CHECK(loss == doctest::Approx(std::log(1 + std::exp(1.0) + std::exp(-10.0))).epsilon(1e-6));
  for (float g : dhuge.to_vector()) CHECK(std::isfinite(g));

  std::mt19937 rng(16);
  tensor logits = random_tensor({4, 5}, rng, -3.f, 3.f);
  const std::vector<int32_t> labels{0, 4, 2, 2};
  tensor dlogits;
  cpu->softmax_cross_entropy(logits, labels, &dlogits, nullptr);
  CHECK(scaled_error(dlogits, numeric_gradient(logits, 1e-2f, [&] {
                       return static_cast<double>(
                           cpu->softmax_cross_entropy(logits, labels, nullptr, nullptr));
                     })) < 5e-3);
  // Each row of dlogits sums to zero: softmax and onehot both sum to one.
  for (int64_t i = 0; i < 4; ++i) {
    double row = 0;
    for (int64_t j = 0; j < 5; ++j) row += dlogits.data()[i * 5 + j];
    CHECK(std::abs(row) < 1e-7);
  }
}

TEST_CASE("softmax_cross_entropy rejects labels out of range, naming the index and value") {
  auto cpu = make_cpu_backend(1);
  const tensor logits = tensor::zeros({3, 10});
  CHECK_THROWS_WITH_AS(cpu->softmax_cross_entropy(logits, {1, 10, 2}, nullptr, nullptr),
                       doctest::Contains("labels[1] = 10 is outside [0, 10)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->softmax_cross_entropy(logits, {1, 2, -1}, nullptr, nullptr),
                       doctest::Contains("labels[2] = -1"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->softmax_cross_entropy(logits, {1, 2}, nullptr, nullptr),
                       doctest::Contains("2 labels for logits (3, 10)"), std::invalid_argument);
}
