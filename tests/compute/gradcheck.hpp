// Finite-difference checking of blocks: directional derivatives of L = Σ r·y along random
// directions, for the input and for every parameter tensor, against the backward.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "compute/blocks/block.hpp"

namespace petra::testing {

inline tensor random_tensor(const shape_t& shape, std::mt19937& rng, float scale = 1.f) {
  std::normal_distribution<float> normal(0.f, scale);
  tensor t = tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = normal(rng);
  return t;
}

inline activation random_activation(const activation_shape& s, std::mt19937& rng) {
  return {random_tensor(s.x1, rng), s.x2.empty() ? tensor{} : random_tensor(s.x2, rng)};
}

inline double dot(const tensor& a, const tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += static_cast<double>(a.data()[i]) * b.data()[i];
  return s;
}

inline double dot(const activation& a, const activation& b) {
  return dot(a.x1, b.x1) + (a.two_streams() ? dot(a.x2, b.x2) : 0.0);
}

/// x + h·v (fresh)
inline tensor axpy(const tensor& x, double h, const tensor& v) {
  tensor out = x.clone();
  for (int64_t i = 0; i < x.numel(); ++i) out.data()[i] = static_cast<float>(x.data()[i] + h * v.data()[i]);
  return out;
}

/// |a − b| relative to the larger, with an absolute floor for derivatives that are 0 in exact
/// arithmetic (a conv bias followed by batch norm).
inline double relative_gap(double a, double b, double floor = 0.1) {
  return std::abs(a - b) / std::max({std::abs(a), std::abs(b), floor});
}

/// A random direction of unit L2 norm.
inline tensor random_direction(const shape_t& shape, std::mt19937& rng) {
  tensor v = random_tensor(shape, rng);
  const double n = std::sqrt(dot(v, v));
  for (int64_t i = 0; i < v.numel(); ++i) v.data()[i] = static_cast<float>(v.data()[i] / n);
  return v;
}

/// Checks dx and every parameter gradient of `b` at `x` in recompute mode (batch statistics).
/// Each directional derivative is estimated with a ladder of steps h, h/3, h/10, h/30: a ReLU kink
/// inside the interval or batch norm's curvature on a near-constant channel spoils the coarse
/// estimates, fp32 round-off the fine ones; a wrong gradient agrees with none of them.
inline void check_block_gradients(block& b, const activation& x, std::mt19937& rng, double h = 3e-3,
                                  double tolerance = 2e-2, bool check_input = true) {
  const activation_shape in_shape{x.x1.shape(), x.two_streams() ? x.x2.shape() : shape_t{}};
  const activation r = random_activation(b.output_shape(in_shape), rng);
  auto loss = [&](const activation& in) { return dot(b.forward(in, pass::recompute, nullptr), r); };
  auto best_gap = [&](const std::function<double(double)>& numeric_at, double analytic) {
    double best = 1e30, seen = 0;
    for (double step : {h, h / 3, h / 10, h / 30}) {
      seen = numeric_at(step);
      best = std::min(best, relative_gap(seen, analytic));
    }
    INFO("numeric " << seen << " analytic " << analytic);
    CHECK(best < tolerance);
  };

  for (parameter* p : b.parameters()) p->grad = tensor::zeros(p->value.shape());
  tape t;
  b.forward(x, pass::recompute, &t);
  const activation dx = b.backward(t, r);
  CHECK(t.empty());

  if (check_input) {
    const activation v{random_direction(x.x1.shape(), rng),
                       x.two_streams() ? random_direction(x.x2.shape(), rng) : tensor{}};
    INFO(b.name() << " input");
    best_gap(
        [&](double step) {
          const activation plus{axpy(x.x1, step, v.x1), x.two_streams() ? axpy(x.x2, step, v.x2) : tensor{}};
          const activation minus{axpy(x.x1, -step, v.x1),
                                 x.two_streams() ? axpy(x.x2, -step, v.x2) : tensor{}};
          return (loss(plus) - loss(minus)) / (2 * step);
        },
        dot(dx, v));
  }
  for (parameter* p : b.parameters()) {
    const tensor v = random_direction(p->value.shape(), rng);
    const tensor saved = p->value;
    INFO(b.name() << " parameter " << p->name);
    best_gap(
        [&](double step) {
          p->value = axpy(saved, step, v);
          const double lp = loss(x);
          p->value = axpy(saved, -step, v);
          const double lm = loss(x);
          p->value = saved;
          return (lp - lm) / (2 * step);
        },
        dot(p->grad, v));
  }
}

}  // namespace petra::testing
