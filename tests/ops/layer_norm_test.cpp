// Layer norm over each token's features on the CPU backend: hand values, per-token statistics,
// gradients against central finite differences (token by token, the last of an odd count
// included), accumulation of the parameter gradients, and the bad shapes it refuses.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("layer_norm_forward normalises each token over its features, with γ and β per feature") {
  auto cpu = make_cpu_backend(1);
  const float eps = 1e-5f;
  // Two tokens of 4 features: {1, 2, 3, 4} (μ 2.5, σ² 1.25) and {0, 0, 2, -2} (μ 0, σ² 2).
  const tensor x = tensor::from_vector({1, 2, 4}, {1, 2, 3, 4, 0, 0, 2, -2});
  const tensor gamma = tensor::from_vector({4}, {1, 2, 0.5f, -1}),
               beta = tensor::from_vector({4}, {0, 1, -1, 2});
  layer_norm_saved saved;
  const tensor y = cpu->layer_norm_forward(x, gamma, beta, eps, saved);
  REQUIRE(saved.mean.shape() == shape_t{1, 2});
  CHECK(saved.mean.data()[0] == doctest::Approx(2.5));
  CHECK(saved.mean.data()[1] == doctest::Approx(0.0));
  const double inv0 = 1 / std::sqrt(1.25 + eps), inv1 = 1 / std::sqrt(2.0 + eps);
  CHECK(saved.inv_std.data()[0] == doctest::Approx(inv0).epsilon(1e-6));
  CHECK(saved.inv_std.data()[1] == doctest::Approx(inv1).epsilon(1e-6));
  const float g[4] = {1, 2, 0.5f, -1}, b[4] = {0, 1, -1, 2};
  for (int i = 0; i < 4; ++i) {
    CHECK(y.data()[i] == doctest::Approx(g[i] * (x.data()[i] - 2.5) * inv0 + b[i]).epsilon(1e-5));
    CHECK(y.data()[4 + i] == doctest::Approx(g[i] * x.data()[4 + i] * inv1 + b[i]).epsilon(1e-5));
  }
}

TEST_CASE("layer norm gradients match finite differences on every token, the last of an odd count too") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(71);
  const float eps = 1e-5f;
  // N = 3 samples of T = 5 tokens: 15 tokens, an odd number of each.
  tensor x = random_tensor({3, 5, 6}, rng, -2.f, 2.f), gamma = random_tensor({6}, rng, 0.5f, 1.5f),
         beta = random_tensor({6}, rng);
  const tensor probe = random_tensor(x.shape(), rng);
  auto loss = [&] {
    layer_norm_saved s;
    return dot(probe, cpu->layer_norm_forward(x, gamma, beta, eps, s));
  };
  layer_norm_saved saved;
  cpu->layer_norm_forward(x, gamma, beta, eps, saved);
  const tensor dgamma_start = random_tensor({6}, rng), dbeta_start = random_tensor({6}, rng);
  tensor dgamma = dgamma_start.clone(), dbeta = dbeta_start.clone();
  const tensor dx = cpu->layer_norm_backward(x, gamma, saved, probe, dgamma, dbeta);
  CHECK(worst_item_error(dx, numeric_gradient(x, 1e-3f, loss), 15) < 5e-3);
  CHECK(scaled_error(difference(dgamma, dgamma_start), numeric_gradient(gamma, 1e-3f, loss)) < 5e-3);
  CHECK(scaled_error(difference(dbeta, dbeta_start), numeric_gradient(beta, 1e-3f, loss)) < 5e-3);
}

TEST_CASE("layer norm's output has mean β and std |γ| per token, the same bits on one thread and two") {
  std::mt19937 rng(72);
  const tensor x = random_tensor({4, 33, 64}, rng, 3.f, 5.f);  // |mean| ≫ std: the two-pass variance
  const tensor gamma = tensor::from_vector({64}, std::vector<float>(64, 1.5f));
  const tensor beta = tensor::from_vector({64}, std::vector<float>(64, -0.5f));
  layer_norm_saved saved, saved_one;
  const tensor y = make_cpu_backend(2)->layer_norm_forward(x, gamma, beta, 0.f, saved);
  for (int64_t t = 0; t < 4 * 33; ++t) {
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < 64; ++i) sum += y.data()[t * 64 + i];
    for (int64_t i = 0; i < 64; ++i) squares += std::pow(y.data()[t * 64 + i] - sum / 64, 2);
    CHECK(sum / 64 == doctest::Approx(-0.5).epsilon(1e-4));
    CHECK(std::sqrt(squares / 64) == doctest::Approx(1.5).epsilon(1e-4));
  }
  const tensor y_one = make_cpu_backend(1)->layer_norm_forward(x, gamma, beta, 0.f, saved_one);
  CHECK(y_one.to_vector() == y.to_vector());
  tensor dg = tensor::zeros({64}), db = tensor::zeros({64}), dg_one = tensor::zeros({64}),
         db_one = tensor::zeros({64});
  const tensor dy = random_tensor(x.shape(), rng);
  CHECK(make_cpu_backend(2)->layer_norm_backward(x, gamma, saved, dy, dg, db).to_vector() ==
        make_cpu_backend(1)->layer_norm_backward(x, gamma, saved_one, dy, dg_one, db_one).to_vector());
  CHECK(dg.to_vector() == dg_one.to_vector());
  CHECK(db.to_vector() == db_one.to_vector());
}

TEST_CASE("layer norm preconditions") {
  auto cpu = make_cpu_backend(1);
  layer_norm_saved saved;
  CHECK_THROWS_WITH_AS(
      cpu->layer_norm_forward(tensor::zeros({4, 5}), tensor::zeros({5}), tensor::zeros({5}), 1e-5f, saved),
      "layer_norm_forward: x (4, 5) has rank 2, expected (N, T, C)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      cpu->layer_norm_forward(tensor::zeros({2, 3, 5}), tensor::zeros({4}), tensor::zeros({5}), 1e-5f, saved),
      "layer_norm_forward: gamma (4) has 4 entries but x's features (C) has 5", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      cpu->layer_norm_forward(tensor::zeros({2, 3, 0}), tensor::zeros({0}), tensor::zeros({0}), 1e-5f, saved),
      doctest::Contains("has no features on its last axis"), std::invalid_argument);
  const tensor x = tensor::zeros({2, 3, 5});
  cpu->layer_norm_forward(x, tensor::zeros({5}), tensor::zeros({5}), 1e-5f, saved);
  tensor dg = tensor::zeros({5}), db = tensor::zeros({5});
  CHECK_THROWS_WITH_AS(cpu->layer_norm_backward(tensor::zeros({3, 2, 5}), tensor::zeros({5}), saved,
                                                tensor::zeros({3, 2, 5}), dg, db),
                       doctest::Contains("saved.mean (2, 3) must be (N, T) = (3, 2)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      cpu->layer_norm_backward(x, tensor::zeros({5}), saved, tensor::zeros({2, 3, 4}), dg, db),
      "layer_norm_backward: dy (2, 3, 4) and x (2, 3, 5) must have the same shape", std::invalid_argument);
}
