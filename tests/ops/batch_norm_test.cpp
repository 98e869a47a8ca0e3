// Batch norm on the CPU backend: batch statistics, running statistics and eval
// forward against hand-computed values; backward against finite differences.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

namespace {

// x (2, 2, 1, 2): channel 0 holds {1, 2, 3, 4}, channel 1 holds {0, 0, 2, -2}.
tensor small_input() { return tensor::from_vector({2, 2, 1, 2}, {1, 2, 0, 0, 3, 4, 2, -2}); }

}  // namespace

TEST_CASE("batch_norm_forward_train normalises with the batch mean and the biased variance") {
  auto cpu = make_cpu_backend(1);
  const float eps = 1e-5f;
  const tensor gamma = tensor::from_vector({2}, {2.f, 0.5f}), beta = tensor::from_vector({2}, {1.f, -1.f});
  batch_norm_saved saved;
  const tensor y = cpu->batch_norm_forward_train(small_input(), gamma, beta, eps, saved);

  // channel 0: μ = 2.5, σ² = (2.25 + 0.25 + 0.25 + 2.25)/4 = 1.25; channel 1: μ = 0, σ² = 2.
  CHECK(saved.mean.data()[0] == doctest::Approx(2.5));
  CHECK(saved.mean.data()[1] == doctest::Approx(0.0));
  const double inv0 = 1 / std::sqrt(1.25 + eps), inv1 = 1 / std::sqrt(2.0 + eps);
  CHECK(saved.inv_std.data()[0] == doctest::Approx(inv0).epsilon(1e-6));
  CHECK(saved.inv_std.data()[1] == doctest::Approx(inv1).epsilon(1e-6));
  const double expected[8] = {2 * (1 - 2.5) * inv0 + 1,
                              2 * (2 - 2.5) * inv0 + 1,
                              -1,
                              -1,
                              2 * (3 - 2.5) * inv0 + 1,
                              2 * (4 - 2.5) * inv0 + 1,
                              0.5 * 2 * inv1 - 1,
                              0.5 * -2 * inv1 - 1};
  for (int i = 0; i < 8; ++i) CHECK(y.data()[i] == doctest::Approx(expected[i]).epsilon(1e-5));
}

TEST_CASE("batch_norm_forward_train output has mean beta and std gamma per channel (large, threaded)") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(21);
  const tensor x =
      random_tensor({8, 16, 12, 12}, rng, 3.f, 5.f);  // |mean| ≫ std: tests the two-pass variance
  const tensor gamma = random_tensor({16}, rng, 0.5f, 2.f), beta = random_tensor({16}, rng);
  batch_norm_saved saved;
  const tensor y = cpu->batch_norm_forward_train(x, gamma, beta, 0.f, saved);
  const int64_t plane = 144, count = 8 * plane;
  for (int64_t c = 0; c < 16; ++c) {
    double sum = 0, squares = 0;
    for (int64_t n = 0; n < 8; ++n)
      for (int64_t i = 0; i < plane; ++i) sum += y.data()[(n * 16 + c) * plane + i];
    const double mean = sum / count;
    for (int64_t n = 0; n < 8; ++n)
      for (int64_t i = 0; i < plane; ++i) squares += std::pow(y.data()[(n * 16 + c) * plane + i] - mean, 2);
    CHECK(mean == doctest::Approx(beta.data()[c]).epsilon(1e-4).scale(1.0));
    CHECK(std::sqrt(squares / count) == doctest::Approx(gamma.data()[c]).epsilon(1e-4));
  }
  // Same result on one thread: each channel's sums run in one fixed order.
  batch_norm_saved saved_one;
  const tensor y_one = make_cpu_backend(1)->batch_norm_forward_train(x, gamma, beta, 0.f, saved_one);
  CHECK(y_one.to_vector() == y.to_vector());
  CHECK(saved_one.inv_std.to_vector() == saved.inv_std.to_vector());
}

TEST_CASE("batch_norm_update_running blends in the unbiased variance with PyTorch's momentum") {
  auto cpu = make_cpu_backend(1);
  const float eps = 1e-5f, momentum = 0.1f;
  batch_norm_saved saved;
  const tensor x = small_input();
  cpu->batch_norm_forward_train(x, tensor::from_vector({2}, {1, 1}), tensor::zeros({2}), eps, saved);
  tensor running_mean = tensor::from_vector({2}, {1.f, -1.f}),
         running_var = tensor::from_vector({2}, {1.f, 3.f});
  cpu->batch_norm_update_running(saved, 4, eps, momentum, running_mean, running_var);
  // unbiased: 1.25·4/3 and 2·4/3.
  CHECK(running_mean.data()[0] == doctest::Approx(0.9 * 1 + 0.1 * 2.5));
  CHECK(running_mean.data()[1] == doctest::Approx(0.9 * -1 + 0.1 * 0));
  CHECK(running_var.data()[0] == doctest::Approx(0.9 * 1 + 0.1 * 1.25 * 4 / 3).epsilon(1e-5));
  CHECK(running_var.data()[1] == doctest::Approx(0.9 * 3 + 0.1 * 2.0 * 4 / 3).epsilon(1e-5));

  CHECK_THROWS_WITH_AS(cpu->batch_norm_update_running(saved, 1, eps, momentum, running_mean, running_var),
                       doctest::Contains("at least 2 values per channel"), std::invalid_argument);
}

TEST_CASE("batch_norm_forward_eval uses the running statistics, not the batch's") {
  auto cpu = make_cpu_backend(1);
  const float eps = 1e-3f;
  const tensor gamma = tensor::from_vector({2}, {2.f, 0.5f}), beta = tensor::from_vector({2}, {1.f, -1.f});
  const tensor running_mean = tensor::from_vector({2}, {0.5f, -1.f}),
               running_var = tensor::from_vector({2}, {4.f, 0.25f});
  const tensor x = small_input();
  const tensor y = cpu->batch_norm_forward_eval(x, gamma, beta, running_mean, running_var, eps);
  for (int64_t i = 0; i < 8; ++i) {
    const int64_t c = (i / 2) % 2;
    const double expected = gamma.data()[c] * (x.data()[i] - running_mean.data()[c]) /
                                std::sqrt(running_var.data()[c] + static_cast<double>(eps)) +
                            beta.data()[c];
    CHECK(y.data()[i] == doctest::Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("batch_norm_backward matches finite differences and accumulates dgamma, dbeta") {
  auto cpu = make_cpu_backend(1);
  std::mt19937 rng(4);
  const float eps = 1e-5f;
  tensor x = random_tensor({3, 2, 3, 3}, rng, -2.f, 2.f);
  tensor gamma = random_tensor({2}, rng, 0.5f, 1.5f), beta = random_tensor({2}, rng);
  const tensor probe = random_tensor(x.shape(), rng);
  auto loss = [&] {
    batch_norm_saved s;
    return dot(probe, cpu->batch_norm_forward_train(x, gamma, beta, eps, s));
  };
  batch_norm_saved saved;
  cpu->batch_norm_forward_train(x, gamma, beta, eps, saved);
  const tensor dgamma_start = tensor::from_vector({2}, {0.25f, -0.5f}),
               dbeta_start = tensor::from_vector({2}, {1.f, 2.f});
  tensor dgamma = dgamma_start.clone(), dbeta = dbeta_start.clone();
  const tensor dx = cpu->batch_norm_backward(x, gamma, saved, probe, dgamma, dbeta);

  CHECK(scaled_error(dx, numeric_gradient(x, 1e-3f, loss)) < 5e-3);
  CHECK(scaled_error(difference(dgamma, dgamma_start), numeric_gradient(gamma, 1e-3f, loss)) < 5e-3);
  CHECK(scaled_error(difference(dbeta, dbeta_start), numeric_gradient(beta, 1e-3f, loss)) < 5e-3);
  // dx of a batch norm sums to zero per channel: shifting a channel's inputs changes nothing.
  for (int64_t c = 0; c < 2; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 9; ++i) sum += dx.data()[(n * 2 + c) * 9 + i];
    CHECK(std::abs(sum) < 1e-5);
  }
}

TEST_CASE("batch norm preconditions name the mismatched tensor") {
  auto cpu = make_cpu_backend(1);
  batch_norm_saved saved;
  const tensor x = tensor::zeros({4, 3, 2, 2});
  CHECK_THROWS_WITH_AS(cpu->batch_norm_forward_train(x, tensor::zeros({4}), tensor::zeros({3}), 1e-5f, saved),
                       "batch_norm_forward_train: gamma (4) has 4 entries but x's channels has 3",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->batch_norm_forward_train(tensor::zeros({4, 3}), tensor::zeros({3}),
                                                     tensor::zeros({3}), 1e-5f, saved),
                       doctest::Contains("x (4, 3) has rank 2"), std::invalid_argument);
  cpu->batch_norm_forward_train(x, tensor::zeros({3}), tensor::zeros({3}), 1e-5f, saved);
  tensor dgamma = tensor::zeros({3}), dbeta = tensor::zeros({3});
  CHECK_THROWS_WITH_AS(
      cpu->batch_norm_backward(x, tensor::zeros({3}), saved, tensor::zeros({4, 3, 2, 1}), dgamma, dbeta),
      doctest::Contains("dy (4, 3, 2, 1) and x (4, 3, 2, 2) must have the same shape"),
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      cpu->batch_norm_forward_eval(x, tensor::zeros({3}), tensor::zeros({3}), tensor::zeros({3}),
                                   tensor::from_vector({3}, {1, -1, 1}), 1e-5f),
      doctest::Contains("running_var[1]"), std::invalid_argument);
}
