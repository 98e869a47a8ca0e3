// The token ops' forward mode against central differences, and against each op's backward by the
// adjoint identity ⟨J v, u⟩ = ⟨v, Jᵀ u⟩: layer norm (its Jacobian is not symmetric: γ weighs the
// output side only), GELU, softmax, the batched matmul in its four transpose choices, the token mean.
#include <doctest/doctest.h>

#include "compute/forward/op_jvps.hpp"
#include "tests/compute/jvp_check.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("layer norm's tangent (input, γ, β) matches differences and its backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(41);
  const float eps = 1e-5f;
  const tensor x = random_tensor({3, 5, 6}, rng), gamma = random_tensor({6}, rng),
               beta = random_tensor({6}, rng);
  const tensor x_dot = random_direction(x.shape(), rng), gamma_dot = random_direction({6}, rng),
               beta_dot = random_direction({6}, rng);
  const tensor u = random_tensor(x.shape(), rng);
  layer_norm_saved saved;
  be->layer_norm_forward(x, gamma, beta, eps, saved);
  for (int which : {0, 1, 2}) {  // x alone, the parameters alone, all
    CAPTURE(which);
    const tensor xd = which != 1 ? x_dot : tensor{};
    const tensor gd = which != 0 ? gamma_dot : tensor{}, bd = which != 0 ? beta_dot : tensor{};
    const tensor y_dot = layer_norm_tangent(*be, x, xd, gamma, gd, bd, saved, eps);
    check_directional_derivative(
        [&](double s) {
          layer_norm_saved unused;
          return dot(u, be->layer_norm_forward(step_along(x, s, xd), step_along(gamma, s, gd),
                                               step_along(beta, s, bd), eps, unused));
        },
        dot(u, y_dot));
    tensor dgamma = tensor::zeros({6}), dbeta = tensor::zeros({6});
    const tensor dx = be->layer_norm_backward(x, gamma, saved, u, dgamma, dbeta);
    check_adjoint(dot(u, y_dot), dot_or_zero(xd, dx) + dot_or_zero(gd, dgamma) + dot_or_zero(bd, dbeta));
  }
  CHECK_FALSE(layer_norm_tangent(*be, x, {}, gamma, {}, {}, saved, eps).defined());
}

TEST_CASE("GELU's and softmax's tangents match differences and their backwards") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(42);
  const tensor x = random_tensor({3, 4, 7}, rng, 2.f), x_dot = random_direction(x.shape(), rng);
  const tensor u = random_tensor(x.shape(), rng);
  const tensor gelu_dot = gelu_tangent(*be, x, x_dot);
  check_directional_derivative([&](double s) { return dot(u, be->gelu_forward(axpy(x, s, x_dot))); },
                               dot(u, gelu_dot));
  check_adjoint(dot(u, gelu_dot), dot(x_dot, be->gelu_backward(x, u)));
  const tensor y = be->softmax_forward(x);
  const tensor softmax_dot = softmax_tangent(*be, y, x_dot);
  check_directional_derivative([&](double s) { return dot(u, be->softmax_forward(axpy(x, s, x_dot))); },
                               dot(u, softmax_dot));
  check_adjoint(dot(u, softmax_dot), dot(x_dot, be->softmax_backward(y, u)));
  CHECK_FALSE(gelu_tangent(*be, x, {}).defined());
  CHECK_FALSE(softmax_tangent(*be, y, {}).defined());
}

TEST_CASE("the batched matmul's tangent matches differences and its backward, each transpose choice") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(43);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const tensor a = random_tensor(ta ? shape_t{3, 4, 5} : shape_t{3, 5, 4}, rng);
      const tensor b = random_tensor(tb ? shape_t{3, 6, 4} : shape_t{3, 4, 6}, rng);
      const tensor a_dot = random_direction(a.shape(), rng), b_dot = random_direction(b.shape(), rng);
      const tensor u = random_tensor({3, 5, 6}, rng);
      for (int which : {0, 1, 2}) {
        CAPTURE(which);
        const tensor ad = which != 1 ? a_dot : tensor{}, bd = which != 0 ? b_dot : tensor{};
        const tensor c_dot = batched_matmul_tangent(*be, a, ad, b, bd, ta, tb);
        check_directional_derivative(
            [&](double s) {
              return dot(u, be->batched_matmul(step_along(a, s, ad), step_along(b, s, bd), ta, tb));
            },
            dot(u, c_dot));
        const auto [da, db] = be->batched_matmul_backward(a, b, u, ta, tb);
        check_adjoint(dot(u, c_dot), dot_or_zero(ad, da) + dot_or_zero(bd, db));
      }
      CHECK_FALSE(batched_matmul_tangent(*be, a, {}, b, {}, ta, tb).defined());
    }
}

TEST_CASE("the token mean's tangent matches its backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(44);
  const tensor x_dot = random_direction({3, 5, 4}, rng), u = random_tensor({3, 4}, rng);
  const tensor y_dot = token_mean_tangent(*be, x_dot);
  check_adjoint(dot(u, y_dot), dot(x_dot, be->token_mean_backward(u, x_dot.shape())));
  CHECK_FALSE(token_mean_tangent(*be, {}).defined());
}
