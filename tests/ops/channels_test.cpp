// Channel split and concatenation on the CPU backend.
#include <doctest/doctest.h>

#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("split_channels takes the first and second half of every sample's channels") {
  auto cpu = make_cpu_backend(1);
  // x (2, 4, 1, 1): sample 0 = {0, 1, 2, 3}, sample 1 = {4, 5, 6, 7}.
  const tensor x = tensor::from_vector({2, 4, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  const auto [first, second] = cpu->split_channels(x);
  CHECK(first.shape() == shape_t{2, 2, 1, 1});
  CHECK(first.to_vector() == std::vector<float>{0, 1, 4, 5});
  CHECK(second.to_vector() == std::vector<float>{2, 3, 6, 7});
}

TEST_CASE("concat_channels inverts split_channels, and the other way round") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(15);
  const tensor x = random_tensor({6, 32, 16, 16}, rng);
  const auto [first, second] = cpu->split_channels(x);
  CHECK(cpu->concat_channels(first, second).to_vector() == x.to_vector());
  const tensor a = random_tensor({3, 5, 4, 4}, rng), b = random_tensor({3, 5, 4, 4}, rng);
  const auto [a_back, b_back] = cpu->split_channels(cpu->concat_channels(a, b));
  CHECK(a_back.to_vector() == a.to_vector());
  CHECK(b_back.to_vector() == b.to_vector());
}

TEST_CASE("channel preconditions") {
  auto cpu = make_cpu_backend(1);
  CHECK_THROWS_WITH_AS(
      cpu->split_channels(tensor::zeros({2, 3, 4, 4})),
      "split_channels: x (2, 3, 4, 4) has 3 channels, expected an even number: the split makes two "
      "equal halves",
      std::invalid_argument);
  CHECK_THROWS_AS(cpu->concat_channels(tensor::zeros({2, 3, 4, 4}), tensor::zeros({2, 2, 4, 4})),
                  std::invalid_argument);
}
