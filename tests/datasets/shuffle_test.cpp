// epoch_order: a permutation, a pure function of (n, seed, epoch), new each epoch, and unbiased.
#include "datasets/shuffle.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

using petra::data::epoch_order;

TEST_CASE("epoch_order is a permutation of 0..n-1") {
  for (int64_t n : {0, 1, 2, 7, 1000, 60000}) {
    CAPTURE(n);
    auto order = epoch_order(n, 42, 3);
    REQUIRE(order.size() == static_cast<std::size_t>(n));
    std::sort(order.begin(), order.end());
    std::vector<int64_t> identity(static_cast<std::size_t>(n));
    std::iota(identity.begin(), identity.end(), int64_t{0});
    CHECK(order == identity);
  }
  CHECK_THROWS_AS(epoch_order(-1, 0, 0), std::invalid_argument);
}

TEST_CASE("epoch_order depends only on (n, seed, epoch)") {
  CHECK(epoch_order(1000, 7, 5) == epoch_order(1000, 7, 5));
  CHECK(epoch_order(1000, 7, 5) != epoch_order(1000, 7, 6));
  CHECK(epoch_order(1000, 7, 5) != epoch_order(1000, 8, 5));
  CHECK(epoch_order(1000, 7, 0) != epoch_order(1000, 7, 1));
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), int64_t{0});
  CHECK(epoch_order(1000, 0, 0) != identity);
}

TEST_CASE("epoch_order is uniform: over many epochs each item leads about equally often") {
  constexpr int n = 8, epochs = 8000;
  std::vector<int> first(n, 0);
  for (int epoch = 0; epoch < epochs; ++epoch) ++first[static_cast<std::size_t>(epoch_order(n, 1, epoch)[0])];
  // Expected 1000 each, std ≈ 30: ±150 is five sigmas.
  for (int count : first) CHECK(std::abs(count - epochs / n) < 150);
}
