// Helpers for the op tests: seeded random tensors, the probe loss L = Σ probe·y in
// double, central finite differences, and error measures relative to a tensor's scale.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "compute/tensor.hpp"

namespace petra::test {

inline tensor random_tensor(const shape_t& shape, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> uniform(lo, hi);
  tensor t = tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = uniform(rng);
  return t;
}

/// Σ a·b in double: the scalar loss whose gradient with respect to y is `a`.
inline double dot(const tensor& a, const tensor& b) {
  double sum = 0;
  for (int64_t i = 0; i < a.numel(); ++i) sum += static_cast<double>(a.data()[i]) * b.data()[i];
  return sum;
}

/// dL/dθ_i by central differences for every element of `param`, perturbing it in
/// place and restoring it; `loss` reads `param`.
inline std::vector<double> numeric_gradient(tensor& param, float eps, const std::function<double()>& loss) {
  std::vector<double> grad(static_cast<std::size_t>(param.numel()));
  for (int64_t i = 0; i < param.numel(); ++i) {
    // Each write through a fresh data(): a backend that keeps converted weights sees a write by the
    // buffer's write version, which a pointer kept across loss() would not advance.
    const float saved = param.data()[i];
    param.data()[i] = saved + eps;
    const double up = loss();
    param.data()[i] = saved - eps;
    const double down = loss();
    param.data()[i] = saved;
    grad[i] = (up - down) / (2.0 * static_cast<double>(eps));
  }
  return grad;
}

/// max_i |actual_i − expected_i| / max_i |expected_i|: an error on the scale of the values.
inline double scaled_error(const float* actual, const std::vector<double>& expected) {
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    worst = std::max(worst, std::abs(actual[i] - expected[i]));
    scale = std::max(scale, std::abs(expected[i]));
  }
  return worst / scale;
}

inline double scaled_error(const tensor& actual, const std::vector<double>& expected) {
  return scaled_error(actual.data(), expected);
}

inline double scaled_error(const tensor& actual, const tensor& expected) {
  return scaled_error(actual.data(),
                      std::vector<double>(expected.data(), expected.data() + expected.numel()));
}

/// scaled_error of each of `items` equal runs of `analytic` against `numeric`, the worst: a gradient
/// stale or missing on a single item (the last of an odd number, say) fails on that item's own scale.
inline double worst_item_error(const tensor& analytic, const std::vector<double>& numeric, int64_t items) {
  const int64_t each = analytic.numel() / items;
  double worst = 0;
  for (int64_t i = 0; i < items; ++i)
    worst = std::max(worst, scaled_error(analytic.data() + i * each,
                                         std::vector<double>(numeric.begin() + i * each,
                                                             numeric.begin() + (i + 1) * each)));
  return worst;
}

/// The elements of `after − before` (an accumulated gradient's increment).
inline tensor difference(const tensor& after, const tensor& before) {
  tensor d = tensor::empty(after.shape());
  for (int64_t i = 0; i < after.numel(); ++i) d.data()[i] = after.data()[i] - before.data()[i];
  return d;
}

}  // namespace petra::test
