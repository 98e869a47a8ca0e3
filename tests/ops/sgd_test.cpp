// sgd_update against a hand-written torch.optim.SGD recurrence (dampening 0).
#include <doctest/doctest.h>

#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

namespace {

/// torch.optim.SGD.step for one parameter, in double: the first step sets the
/// buffer to d (clone), later ones to μ·buf + d.
void torch_sgd_step(std::vector<double>& w, std::vector<double>& buf, const tensor& grad,
                    const sgd_update_params& p, bool first_step) {
  for (std::size_t i = 0; i < w.size(); ++i) {
    double d = static_cast<double>(p.grad_scale) * grad.data()[i];
    if (p.weight_decay != 0) d += static_cast<double>(p.weight_decay) * w[i];
    if (p.momentum != 0) {
      buf[i] = first_step ? d : static_cast<double>(p.momentum) * buf[i] + d;
      d = p.nesterov ? d + static_cast<double>(p.momentum) * buf[i] : buf[i];
    }
    w[i] -= static_cast<double>(p.lr) * d;
  }
}

void check_three_steps(const sgd_update_params& p) {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(17);
  tensor w = random_tensor({3, 4}, rng), buffer = tensor::zeros({3, 4});
  std::vector<double> w_ref(w.data(), w.data() + w.numel()), buf_ref(12, 0.0);
  for (int step = 0; step < 3; ++step) {
    const tensor grad = random_tensor({3, 4}, rng);
    cpu->sgd_update(w, grad, buffer, p);
    torch_sgd_step(w_ref, buf_ref, grad, p, step == 0);
  }
  CHECK(scaled_error(w, w_ref) < 1e-6);
  if (p.momentum != 0) CHECK(scaled_error(buffer, buf_ref) < 1e-6);
}

}  // namespace

TEST_CASE("sgd_update follows torch.optim.SGD for three steps") {
  sgd_update_params p;
  p.lr = 0.1f;
  p.momentum = 0.9f;
  p.weight_decay = 5e-4f;
  p.grad_scale = 0.25f;
  SUBCASE("momentum") { check_three_steps(p); }
  SUBCASE("nesterov") {
    p.nesterov = true;
    check_three_steps(p);
  }
  SUBCASE("no momentum, no buffer") {
    p.momentum = 0.f;
    auto cpu = make_cpu_backend(1);
    tensor w = tensor::from_vector({2}, {1.f, -2.f}), no_buffer;
    cpu->sgd_update(w, tensor::from_vector({2}, {4.f, 8.f}), no_buffer, p);
    CHECK(w.data()[0] == doctest::Approx(1 - 0.1 * (0.25 * 4 + 5e-4 * 1)));
    CHECK(w.data()[1] == doctest::Approx(-2 - 0.1 * (0.25 * 8 + 5e-4 * -2)));
    check_three_steps(p);
  }
}

TEST_CASE("sgd_update preconditions") {
  auto cpu = make_cpu_backend(1);
  tensor w = tensor::zeros({4}), buffer = tensor::zeros({4}), short_buffer = tensor::zeros({3});
  sgd_update_params p;
  p.lr = 0.1f;
  p.nesterov = true;
  CHECK_THROWS_WITH_AS(cpu->sgd_update(w, tensor::zeros({4}), buffer, p),
                       doctest::Contains("nesterov needs a positive momentum"), std::invalid_argument);
  p.momentum = 0.9f;
  CHECK_THROWS_WITH_AS(cpu->sgd_update(w, tensor::zeros({4}), short_buffer, p),
                       doctest::Contains("momentum_buffer (3) and w (4) must have the same shape"),
                       std::invalid_argument);
  CHECK_THROWS_AS(cpu->sgd_update(w, tensor::zeros({5}), buffer, p), std::invalid_argument);
}
