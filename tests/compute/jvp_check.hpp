// Checking forward mode: a directional derivative against central differences over a ladder of
// steps (as gradcheck.hpp does for the backward), and the adjoint identity ⟨J v, u⟩ = ⟨v, Jᵀ u⟩
// between a JVP and the existing VJP; and the three checks of a block's JVP.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "tests/compute/gradcheck.hpp"

namespace petra::testing {

/// `probe_at(s)` is a scalar function of the step s along the tangent direction (⟨r, f(x + s·v)⟩);
/// its central difference must agree with `analytic` at one of the steps h, h/3, h/10, h/30: a ReLU
/// kink or batch norm's curvature spoils the coarse ones, fp32 round-off the fine ones, a wrong
/// tangent all of them.
inline void check_directional_derivative(const std::function<double(double)>& probe_at, double analytic,
                                         double h = 3e-3, double tolerance = 2e-2) {
  double best = 1e30, seen = 0;
  for (double step : {h, h / 3, h / 10, h / 30}) {
    seen = (probe_at(step) - probe_at(-step)) / (2 * step);
    best = std::min(best, relative_gap(seen, analytic));
  }
  INFO("numeric " << seen << " analytic " << analytic);
  CHECK(best < tolerance);
}

/// ⟨J v, u⟩ (the JVP's side) against ⟨v, Jᵀ u⟩ (the VJP's): both sides in double over fp32
/// products, so they agree to a few fp32 ulps of the larger terms.
inline void check_adjoint(double jvp_side, double vjp_side, double tolerance = 1e-4) {
  INFO("<J v, u> " << jvp_side << " <v, J^T u> " << vjp_side);
  CHECK(relative_gap(jvp_side, vjp_side, 1e-3) < tolerance);
}

/// 0 for an undefined (zero) tangent.
inline double dot_or_zero(const tensor& a, const tensor& b) {
  return a.defined() && b.defined() ? dot(a, b) : 0.0;
}

inline double dot_or_zero(const activation& a, const activation& b) {
  return dot_or_zero(a.x1, b.x1) + dot_or_zero(a.x2, b.x2);
}

/// x + s·v, or x itself where v is undefined.
inline tensor step_along(const tensor& x, double s, const tensor& v) {
  return v.defined() ? axpy(x, s, v) : x;
}

inline activation random_direction_of(const activation& x, std::mt19937& rng) {
  return {random_direction(x.x1.shape(), rng),
          x.two_streams() ? random_direction(x.x2.shape(), rng) : tensor{}};
}

inline activation step_along(const activation& x, double s, const activation& v) {
  return {step_along(x.x1, s, v.x1), x.two_streams() ? step_along(x.x2, s, v.x2) : tensor{}};
}

inline void check_same_bits(const activation& a, const activation& b) {
  CHECK(a.x1.to_vector() == b.x1.to_vector());
  CHECK(a.two_streams() == b.two_streams());
  if (a.two_streams()) CHECK(a.x2.to_vector() == b.x2.to_vector());
}

/// The three checks of block `b` at x in recompute mode, along ẋ (or none) and θ̇ over every
/// parameter (or none).
inline void check_block_jvp(block& b, const activation& x, std::mt19937& rng, bool input_tangent,
                            bool with_parameters, double tolerance = 2e-2) {
  INFO(b.name() << " (" << b.kind() << "), input tangent " << input_tangent << ", parameter tangents "
                << with_parameters);
  const activation x_dot = input_tangent ? random_direction_of(x, rng) : activation{};
  parameter_tangents theta_dot;
  std::vector<tensor> directions;
  for (parameter* p : b.parameters()) {
    directions.push_back(with_parameters ? random_direction(p->value.shape(), rng) : tensor{});
    if (with_parameters) theta_dot.set(*p, directions.back());
  }

  tape t;
  const auto [y, y_dot] = b.jvp(x, x_dot, pass::recompute, &t, theta_dot);
  check_same_bits(y, b.forward(x, pass::recompute, nullptr));
  const activation_shape in_shape{x.x1.shape(), x.two_streams() ? x.x2.shape() : shape_t{}};
  const activation u = random_activation(b.output_shape(in_shape), rng);

  const std::vector<parameter*> params = b.parameters();
  check_directional_derivative(
      [&](double s) {
        std::vector<tensor> saved;
        for (std::size_t i = 0; i < params.size(); ++i) {
          saved.push_back(params[i]->value);
          params[i]->value = step_along(saved[i], s, directions[i]);
        }
        const double probe = dot(b.forward(step_along(x, s, x_dot), pass::recompute, nullptr), u);
        for (std::size_t i = 0; i < params.size(); ++i) params[i]->value = saved[i];
        return probe;
      },
      dot_or_zero(y_dot, u), 3e-3, tolerance);

  // The backward on the JVP's tape: ⟨ẏ, u⟩ = ⟨ẋ, dx⟩ + Σ ⟨θ̇_p, dp⟩.
  for (parameter* p : params) p->grad = tensor::zeros(p->value.shape());
  const activation dx = b.backward(t, u);
  CHECK(t.empty());
  double vjp_side = dot_or_zero(x_dot, dx);
  for (std::size_t i = 0; i < params.size(); ++i) vjp_side += dot_or_zero(directions[i], params[i]->grad);
  check_adjoint(dot_or_zero(y_dot, u), vjp_side);
}

inline void check_block_jvps(block& b, const activation& x, std::mt19937& rng) {
  check_block_jvp(b, x, rng, true, true);
  check_block_jvp(b, x, rng, true, false);
  check_block_jvp(b, x, rng, false, true);
}

}  // namespace petra::testing
