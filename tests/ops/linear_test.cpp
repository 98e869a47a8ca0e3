// The linear layer on the CPU backend: hand values, finite differences, accumulation.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

TEST_CASE("linear_forward computes x·wᵀ + b") {
  auto cpu = make_cpu_backend(1);
  const tensor x = tensor::from_vector({2, 3}, {1, 2, 3, -1, 0, 1});
  const tensor w = tensor::from_vector({2, 3}, {1, 0, -1, 2, 1, 0});
  const tensor b = tensor::from_vector({2}, {0.5f, -1.f});
  CHECK(cpu->linear_forward(x, w, b).to_vector() == std::vector<float>{-1.5f, 3.f, -1.5f, -3.f});
  CHECK(cpu->linear_forward(x, w, tensor()).to_vector() == std::vector<float>{-2.f, 4.f, -2.f, -2.f});
}

TEST_CASE("linear gradients match finite differences and weight gradients accumulate") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(14);
  tensor x = random_tensor({5, 7}, rng), w = random_tensor({3, 7}, rng), b = random_tensor({3}, rng);
  const tensor probe = random_tensor({5, 3}, rng);
  auto loss = [&] { return dot(probe, cpu->linear_forward(x, w, b)); };
  const tensor dx = cpu->linear_backward_data(probe, w);
  const tensor dw_start = random_tensor({3, 7}, rng), db_start = random_tensor({3}, rng);
  tensor dw = dw_start.clone(), db = db_start.clone();
  cpu->linear_backward_weight(x, probe, dw, db);
  CHECK(scaled_error(dx, numeric_gradient(x, 1e-2f, loss)) < 2e-3);
  CHECK(scaled_error(difference(dw, dw_start), numeric_gradient(w, 1e-2f, loss)) < 2e-3);
  CHECK(scaled_error(difference(db, db_start), numeric_gradient(b, 1e-2f, loss)) < 2e-3);
}

TEST_CASE("linear preconditions") {
  auto cpu = make_cpu_backend(1);
  CHECK_THROWS_WITH_AS(cpu->linear_forward(tensor::zeros({4, 5}), tensor::zeros({3, 6}), tensor()),
                       "linear_forward: x (4, 5) has 5 features but w (3, 6) expects 6",
                       std::invalid_argument);
  CHECK_THROWS_AS(cpu->linear_forward(tensor::zeros({4, 5}), tensor::zeros({3, 5}), tensor::zeros({4})),
                  std::invalid_argument);
  CHECK_THROWS_AS(cpu->linear_backward_data(tensor::zeros({4, 2}), tensor::zeros({3, 5})),
                  std::invalid_argument);
  tensor dw = tensor::zeros({3, 4}), db = tensor::zeros({3});
  CHECK_THROWS_WITH_AS(cpu->linear_backward_weight(tensor::zeros({4, 5}), tensor::zeros({4, 3}), dw, db),
                       doctest::Contains("dw (3, 4) must be (O, I) = (3, 5)"), std::invalid_argument);
}

// The GEMMs run in blocks of 64 output rows (batched products: one per item) spread over the
// backend's threads: the same bits on one thread and on two, for a shape of several blocks.
TEST_CASE("linear and batched matmul: the same bits on one and on two threads, large enough to split") {
  std::mt19937 rng(31);
  const tensor x = random_tensor({200, 96}, rng), w = random_tensor({128, 96}, rng),
               b = random_tensor({128}, rng);
  const tensor dy = random_tensor({200, 128}, rng);
  const tensor a = random_tensor({24, 49, 32}, rng), k = random_tensor({24, 49, 32}, rng);
  std::vector<std::vector<float>> bits[2];
  for (int threads : {1, 2}) {
    auto cpu = make_cpu_backend(threads);
    tensor dw = tensor::zeros({128, 96}), db = tensor::zeros({128});
    cpu->linear_backward_weight(cpu->from_host(x), cpu->from_host(dy), dw, db);
    bits[threads - 1] = {
        cpu->to_host(cpu->linear_forward(cpu->from_host(x), cpu->from_host(w), cpu->from_host(b)))
            .to_vector(),
        cpu->to_host(cpu->linear_backward_data(cpu->from_host(dy), cpu->from_host(w))).to_vector(),
        dw.to_vector(), db.to_vector(),
        cpu->to_host(cpu->batched_matmul(cpu->from_host(a), cpu->from_host(k), false, true)).to_vector()};
  }
  for (std::size_t i = 0; i < bits[0].size(); ++i) {
    CAPTURE(i);
    CHECK(bits[0][i] == bits[1][i]);
  }
  // And the blocks compute what one product does (to round-off): x·wᵀ + b at a row of the last block.
  const std::vector<float>& y = bits[0][0];
  double expect = b.data()[5];
  for (int64_t j = 0; j < 96; ++j) expect += double(x.data()[199 * 96 + j]) * w.data()[5 * 96 + j];
  CHECK(std::abs(y[199 * 128 + 5] - expect) < 1e-4 * (1 + std::abs(expect)));
}
