// Fisher–Yates driven by the project's own counter-based generator (std::shuffle's output is
// implementation-defined, which would break cross-machine determinism).
#include "datasets/shuffle.hpp"

#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "datasets/counter_rng.hpp"

namespace petra::data {

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int epoch) {
  if (n < 0) throw std::invalid_argument("epoch_order: n = " + std::to_string(n) + ", expected n ≥ 0");
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  counter_rng rng(seed, rng_stream::shuffle, epoch, 0);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace petra::data
