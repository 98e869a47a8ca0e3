// GELU (the exact erf form), the mean over tokens and linear over tokens (the existing linear op on
// a (N·T, C) view) on the CPU backend: hand values, finite differences, the bad shapes refused.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("gelu_forward is x·Φ(x) with the exact erf, not the tanh approximation") {
  auto cpu = make_cpu_backend(1);
  const tensor y = cpu->gelu_forward(tensor::from_vector({4}, {-3.f, 0.f, 1.f, 2.f}));
  // x·Φ(x): Φ(1) = 0.8413447461, Φ(2) = 0.9772498681, Φ(−3) = 0.0013498980.
  CHECK(y.data()[0] == doctest::Approx(-3 * 0.0013498980).epsilon(1e-6));
  CHECK(y.data()[1] == 0.f);
  CHECK(y.data()[2] == doctest::Approx(0.8413447461).epsilon(1e-6));
  CHECK(y.data()[3] == doctest::Approx(2 * 0.9772498681).epsilon(1e-6));
  // The tanh form gives 0.8411920 at 1: 1.5e-4 away, far outside the tolerance above.
  CHECK(std::abs(y.data()[2] - 0.8411920f) > 1e-4);
}

TEST_CASE("gelu gradient matches finite differences") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(91);
  tensor x = random_tensor({3, 5, 7}, rng, -3.f, 3.f);
  const tensor probe = random_tensor(x.shape(), rng);
  auto loss = [&] { return dot(probe, cpu->gelu_forward(x)); };
  CHECK(scaled_error(cpu->gelu_backward(x, probe), numeric_gradient(x, 1e-3f, loss)) < 5e-3);
}

TEST_CASE("token_mean averages each sample's tokens per feature, its gradient matches differences") {
  auto cpu = make_cpu_backend(1);
  const tensor x = tensor::from_vector({2, 3, 2}, {1, 2, 3, 4, 5, 6, -1, 0, -2, 0, -3, 3});
  CHECK(cpu->token_mean_forward(x).to_vector() == std::vector<float>{3, 4, -2, 1});

  std::mt19937 rng(92);
  tensor big = random_tensor({3, 5, 4}, rng);  // an odd batch of odd token counts
  const tensor probe = random_tensor({3, 4}, rng);
  auto loss = [&] { return dot(probe, cpu->token_mean_forward(big)); };
  const tensor dx = cpu->token_mean_backward(probe, big.shape());
  CHECK(worst_item_error(dx, numeric_gradient(big, 1e-2f, loss), 3) < 2e-3);
}

TEST_CASE("token mean preconditions") {
  auto cpu = make_cpu_backend(1);
  CHECK_THROWS_WITH_AS(cpu->token_mean_forward(tensor::zeros({2, 3, 4, 5})),
                       "token_mean_forward: x (2, 3, 4, 5) has rank 4, expected (N, T, C)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->token_mean_forward(tensor::zeros({2, 0, 4})), doctest::Contains("has no tokens"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      cpu->token_mean_backward(tensor::zeros({2, 5}), {2, 3, 4}),
      "token_mean_backward: dy (2, 5) does not match x_shape (2, 3, 4): expected x (N, T, C) "
      "and dy (N, C)",
      std::invalid_argument);
}

TEST_CASE("linear over tokens is the linear op on the (N·T, C) view: per token, samples apart") {
  auto cpu = make_cpu_backend(1);
  std::mt19937 rng(93);
  const tensor x = random_tensor({3, 5, 4}, rng), w = random_tensor({2, 4}, rng), b = random_tensor({2}, rng);
  const tensor y = cpu->linear_forward(x.reshaped({15, 4}), w, b).reshaped({3, 5, 2});
  double worst = 0;
  for (int64_t token = 0; token < 15; ++token)
    for (int64_t o = 0; o < 2; ++o) {
      double sum = b.data()[o];
      for (int64_t i = 0; i < 4; ++i)
        sum += static_cast<double>(x.data()[token * 4 + i]) * w.data()[o * 4 + i];
      worst = std::max(worst, std::abs(y.data()[token * 2 + o] - sum));
    }
  CHECK(worst < 1e-5);
}

TEST_CASE("scale multiplies every value by alpha, any shape, and refuses a non-finite alpha") {
  auto cpu = make_cpu_backend(2);
  const tensor x = tensor::from_vector({2, 1, 3}, {1.f, -2.f, 0.5f, 0.f, 3.f, -0.25f});
  CHECK(cpu->scale(x, 0.5f).to_vector() == std::vector<float>{0.5f, -1.f, 0.25f, 0.f, 1.5f, -0.125f});
  CHECK(cpu->scale(x, -2.f).shape() == shape_t{2, 1, 3});
  CHECK_THROWS_WITH_AS(cpu->scale(x, std::nanf("")), doctest::Contains("scale: alpha = nan must be finite"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->scale(tensor{}, 1.f), doctest::Contains("scale: x is undefined"),
                       std::invalid_argument);
}

TEST_CASE("transpose12 swaps axes 1 and 2 of (N, A, B, C), per sample, and is its own inverse") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(94);
  const tensor x = random_tensor({3, 5, 4, 2}, rng);  // an odd batch, A ≠ B
  const tensor y = cpu->transpose12(x);
  REQUIRE(y.shape() == shape_t{3, 4, 5, 2});
  bool same = true;
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t a = 0; a < 5; ++a)
      for (int64_t b = 0; b < 4; ++b)
        for (int64_t c = 0; c < 2; ++c)
          same = same && y.data()[((n * 4 + b) * 5 + a) * 2 + c] == x.data()[((n * 5 + a) * 4 + b) * 2 + c];
  CHECK(same);
  CHECK(cpu->transpose12(y).to_vector() == x.to_vector());
  CHECK_THROWS_WITH_AS(cpu->transpose12(tensor::zeros({3, 5, 4})),
                       "transpose12: x (3, 5, 4) has rank 3, expected (N, A, B, C)", std::invalid_argument);
}
