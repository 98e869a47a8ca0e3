// adamw_update against a hand-written torch.optim.AdamW recurrence (amsgrad off), in double.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

namespace {

/// torch.optim.AdamW.step for one parameter at step t (1-based), in double.
void torch_adamw_step(std::vector<double>& w, std::vector<double>& m, std::vector<double>& v,
                      const tensor& grad, const adamw_update_params& p, int64_t t) {
  const double lr = p.lr, b1 = p.beta1, b2 = p.beta2;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double g = static_cast<double>(p.grad_scale) * grad.data()[i];
    w[i] *= 1 - lr * static_cast<double>(p.weight_decay);
    m[i] = b1 * m[i] + (1 - b1) * g;
    v[i] = b2 * v[i] + (1 - b2) * g * g;
    const double m_hat = m[i] / (1 - std::pow(b1, static_cast<double>(t)));
    const double v_hat = v[i] / (1 - std::pow(b2, static_cast<double>(t)));
    w[i] -= lr * m_hat / (std::sqrt(v_hat) + static_cast<double>(p.eps));
  }
}

void check_steps(adamw_update_params p, int steps) {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(23);
  tensor w = random_tensor({5, 7}, rng), m = tensor::zeros({5, 7}), v = tensor::zeros({5, 7});
  std::vector<double> w_ref(w.data(), w.data() + w.numel()), m_ref(35, 0.0), v_ref(35, 0.0);
  for (int step = 0; step < steps; ++step, ++p.step) {
    const tensor grad = random_tensor({5, 7}, rng);
    cpu->adamw_update(w, grad, m, v, p);
    torch_adamw_step(w_ref, m_ref, v_ref, grad, p, p.step);
  }
  CHECK(scaled_error(w, w_ref) < 1e-6);
  CHECK(scaled_error(m, m_ref) < 1e-6);
  CHECK(scaled_error(v, v_ref) < 1e-6);
}

}  // namespace

TEST_CASE("adamw_update follows torch.optim.AdamW for five steps") {
  adamw_update_params p;
  p.lr = 1e-2f;
  SUBCASE("plain") { check_steps(p, 5); }
  SUBCASE("decoupled weight decay and a gradient scale") {
    p.weight_decay = 0.05f;
    p.grad_scale = 0.5f;
    check_steps(p, 5);
  }
  SUBCASE("other betas and eps") {
    p.beta1 = 0.8f;
    p.beta2 = 0.95f;
    p.eps = 1e-6f;
    check_steps(p, 5);
  }
}

TEST_CASE("adamw_update's first step moves each weight by lr against its gradient's sign") {
  // t = 1: m̂ = g and v̂ = g², so the step is lr·g/(|g| + eps): ±lr whatever the gradient's size.
  auto cpu = make_cpu_backend(1);
  tensor w = tensor::from_vector({3}, {1.f, 1.f, 1.f}), m = tensor::zeros({3}), v = tensor::zeros({3});
  adamw_update_params p;
  p.lr = 0.01f;
  cpu->adamw_update(w, tensor::from_vector({3}, {1e3f, -2.f, 1e-3f}), m, v, p);
  CHECK(w.data()[0] == doctest::Approx(0.99).epsilon(1e-6));
  CHECK(w.data()[1] == doctest::Approx(1.01).epsilon(1e-6));
  CHECK(w.data()[2] == doctest::Approx(1 - 0.01 * 1e-3 / (1e-3 + 1e-8)).epsilon(1e-6));
  // Weight decay alone (zero gradient): w ·= 1 − lr·wd, the moments stay zero.
  tensor w2 = tensor::from_vector({1}, {2.f}), m2 = tensor::zeros({1}), v2 = tensor::zeros({1});
  p.weight_decay = 0.5f;
  cpu->adamw_update(w2, tensor::zeros({1}), m2, v2, p);
  CHECK(w2.data()[0] == doctest::Approx(2 * (1 - 0.01 * 0.5)));
  CHECK(m2.data()[0] == 0.f);
  CHECK(v2.data()[0] == 0.f);
}
