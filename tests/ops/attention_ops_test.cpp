// The batched matmul and softmax on the CPU backend: each item's product against a plain loop in
// double for every choice of transposes, items kept apart (a layout that mixed the batch would
// attend across it), gradients against central finite differences item by item (the last of an
// odd batch included), softmax's rows and gradients, and the bad shapes refused.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

namespace {

shape_t operand_shape(int64_t batch, int64_t rows, int64_t cols, bool transposed) {
  return transposed ? shape_t{batch, cols, rows} : shape_t{batch, rows, cols};
}

/// op(t)[item](r, c) of a (B, R, C) operand, or of its transpose.
double entry(const tensor& t, bool transposed, int64_t item, int64_t r, int64_t c) {
  const int64_t rows = t.dim(1), cols = t.dim(2);
  return transposed ? t.data()[item * rows * cols + c * cols + r]
                    : t.data()[item * rows * cols + r * cols + c];
}

}  // namespace

TEST_CASE("batched_matmul multiplies item i of a by item i of b, for each choice of transposes") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(81);
  const int64_t batch = 3, m = 4, k = 5, n = 6;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const tensor a = random_tensor(operand_shape(batch, m, k, ta), rng);
      const tensor b = random_tensor(operand_shape(batch, k, n, tb), rng);
      const tensor c = cpu->batched_matmul(a, b, ta, tb);
      REQUIRE(c.shape() == shape_t{batch, m, n});
      double worst = 0;
      for (int64_t item = 0; item < batch; ++item)
        for (int64_t r = 0; r < m; ++r)
          for (int64_t col = 0; col < n; ++col) {
            double sum = 0;
            for (int64_t i = 0; i < k; ++i) sum += entry(a, ta, item, r, i) * entry(b, tb, item, i, col);
            worst = std::max(worst, std::abs(c.data()[(item * m + r) * n + col] - sum));
          }
      CHECK(worst < 1e-5);
    }
}

TEST_CASE("batched_matmul keeps items apart: changing item j of b changes item j of c only, each j") {
  // Attention's scores Q·Kᵀ per (sample, head): a (tokens, batch, channels) mix-up would let one
  // sample's keys reach another's queries.
  auto cpu = make_cpu_backend(1);
  std::mt19937 rng(82);
  const tensor q = random_tensor({3, 7, 4}, rng);
  for (int64_t changed = 0; changed < 3; ++changed) {
    CAPTURE(changed);
    tensor keys = random_tensor({3, 7, 4}, rng);
    const std::vector<float> before = cpu->batched_matmul(q, keys, false, true).to_vector();
    for (int64_t i = changed * 28; i < (changed + 1) * 28; ++i) keys.data()[i] += 1.f;
    const std::vector<float> after = cpu->batched_matmul(q, keys, false, true).to_vector();
    int64_t changed_elsewhere = 0, unchanged_here = 0;
    for (int64_t i = 0; i < 3 * 49; ++i) {
      if (i / 49 == changed)
        unchanged_here += after[i] == before[i];
      else
        changed_elsewhere += after[i] != before[i];
    }
    CHECK(unchanged_here == 0);
    CHECK(changed_elsewhere == 0);
  }
}

TEST_CASE("batched_matmul gradients match finite differences on every item, the last of an odd batch too") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(83);
  const int64_t batch = 3, m = 5, k = 4, n = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      tensor a = random_tensor(operand_shape(batch, m, k, ta), rng);
      tensor b = random_tensor(operand_shape(batch, k, n, tb), rng);
      const tensor probe = random_tensor({batch, m, n}, rng);
      auto loss = [&] { return dot(probe, cpu->batched_matmul(a, b, ta, tb)); };
      const auto [da, db] = cpu->batched_matmul_backward(a, b, probe, ta, tb);
      REQUIRE(da.shape() == a.shape());
      REQUIRE(db.shape() == b.shape());
      CHECK(worst_item_error(da, numeric_gradient(a, 1e-2f, loss), batch) < 2e-3);
      CHECK(worst_item_error(db, numeric_gradient(b, 1e-2f, loss), batch) < 2e-3);
    }
}

TEST_CASE("batched_matmul preconditions") {
  auto cpu = make_cpu_backend(1);
  CHECK_THROWS_WITH_AS(cpu->batched_matmul(tensor::zeros({2, 3, 4}), tensor::zeros({3, 4, 5}), false, false),
                       doctest::Contains("have different batches (2 and 3)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      cpu->batched_matmul(tensor::zeros({2, 3, 4}), tensor::zeros({2, 5, 4}), false, false),
      "batched_matmul: op(a) of a (2, 3, 4) has inner extent 4 but op(b) of b (2, 5, 4) has 5: "
      "check which operand is transposed",
      std::invalid_argument);
  CHECK_NOTHROW(cpu->batched_matmul(tensor::zeros({2, 3, 4}), tensor::zeros({2, 5, 4}), false, true));
  CHECK_THROWS_WITH_AS(cpu->batched_matmul(tensor::zeros({6, 4}), tensor::zeros({2, 4, 5}), false, false),
                       "batched_matmul: a (6, 4) has rank 2, expected (B, M, K)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->batched_matmul_backward(tensor::zeros({2, 3, 4}), tensor::zeros({2, 4, 5}),
                                                    tensor::zeros({2, 5, 3}), false, false),
                       doctest::Contains("dc (2, 5, 3) is not the product's shape (2, 3, 5)"),
                       std::invalid_argument);
}

TEST_CASE("softmax_forward gives rows of positive values summing to 1, shifted inputs the same") {
  auto cpu = make_cpu_backend(1);
  const tensor x = tensor::from_vector({2, 3}, {1, 2, 3, 1000, 1000, 1000});
  const tensor y = cpu->softmax_forward(x);
  const double e1 = std::exp(-2.0), e2 = std::exp(-1.0), sum = e1 + e2 + 1;
  CHECK(y.data()[0] == doctest::Approx(e1 / sum));
  CHECK(y.data()[1] == doctest::Approx(e2 / sum));
  CHECK(y.data()[2] == doctest::Approx(1 / sum));
  for (int i = 3; i < 6; ++i) CHECK(y.data()[i] == doctest::Approx(1.0 / 3));  // no overflow
}

TEST_CASE("softmax gradient from the output matches finite differences, row by row") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(84);
  tensor x = random_tensor({3, 5, 7}, rng, -3.f, 3.f);  // 15 rows, an odd number
  const tensor probe = random_tensor(x.shape(), rng);
  auto loss = [&] { return dot(probe, cpu->softmax_forward(x)); };
  const tensor dx = cpu->softmax_backward(cpu->softmax_forward(x), probe);
  CHECK(worst_item_error(dx, numeric_gradient(x, 1e-3f, loss), 15) < 5e-3);
}

TEST_CASE("softmax preconditions") {
  auto cpu = make_cpu_backend(1);
  CHECK_THROWS_WITH_AS(cpu->softmax_forward(tensor::zeros({3, 0})),
                       doctest::Contains("has no features on its last axis"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->softmax_backward(tensor::zeros({3, 4}), tensor::zeros({4, 3})),
                       "softmax_backward: dy (4, 3) and y (3, 4) must have the same shape",
                       std::invalid_argument);
}
