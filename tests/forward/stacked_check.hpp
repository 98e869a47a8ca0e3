// Comparing a stacked tangent with the tangents computed one at a time, group by group, on the host.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "compute/backend.hpp"
#include "compute/forward/stacked.hpp"

namespace petra::testing {

/// bits: the same floats; close: within 1e-6 of the group's largest magnitude (a GEMM over a bigger
/// batch may block its sums another way); near: 1e-5 (cuDNN may pick another algorithm for another
/// batch).
enum class match { bits, close, near };

/// Group g of `stacked` (batch m·N, on `be`) against separate[g] (batch N, on `be`).
inline void check_groups(backend& be, const tensor& stacked, const std::vector<tensor>& separate, match how) {
  const int64_t m = static_cast<int64_t>(separate.size());
  REQUIRE(m > 0);
  REQUIRE(stacked.defined() == separate.front().defined());
  if (!stacked.defined()) return;
  const int64_t n = separate.front().dim(0);
  REQUIRE(stacked.dim(0) == m * n);
  for (int64_t g = 0; g < m; ++g) {
    CAPTURE(g);
    const tensor group = be.to_host(batch_slice(stacked, g * n, n));
    const tensor alone = be.to_host(separate[static_cast<std::size_t>(g)]);
    REQUIRE(group.shape() == alone.shape());
    const std::vector<float> a = group.to_vector(), b = alone.to_vector();
    if (how == match::bits) {
      CHECK(a == b);
      continue;
    }
    double largest = 0, gap = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      largest = std::max(largest, static_cast<double>(std::abs(b[i])));
      gap = std::max(gap, static_cast<double>(std::abs(a[i] - b[i])));
    }
    CAPTURE(gap);
    CAPTURE(largest);
    CHECK(gap <= (how == match::close ? 1e-6 : 1e-5) * largest);
  }
}

inline void check_groups(backend& be, const activation& stacked, const std::vector<activation>& separate,
                         match how) {
  std::vector<tensor> x1, x2;
  for (const activation& a : separate) {
    x1.push_back(a.x1);
    x2.push_back(a.x2);
  }
  check_groups(be, stacked.x1, x1, how);
  check_groups(be, stacked.x2, x2, how);
}

}  // namespace petra::testing
