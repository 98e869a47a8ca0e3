// conv2d on the CPU backend: oneDNN against the direct-loop reference over several
// geometries, gradients against finite differences, accumulation, preconditions.
#include <doctest/doctest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "compute/backend.hpp"
#include "tests/ops/op_test_helpers.hpp"
#include "tests/ops/reference_conv.hpp"

using namespace petra;
using namespace petra::test;

namespace {

struct conv_case {
  int64_t n, c, h, w, k, r, s;
  int stride, padding;
  bool bias;
};

std::string describe(const conv_case& g) {
  return "x (" + std::to_string(g.n) + "," + std::to_string(g.c) + "," + std::to_string(g.h) + "," +
         std::to_string(g.w) + ") w (" + std::to_string(g.k) + "," + std::to_string(g.c) + "," +
         std::to_string(g.r) + "," + std::to_string(g.s) + ") stride " + std::to_string(g.stride) + " pad " +
         std::to_string(g.padding) + (g.bias ? " bias" : " no bias");
}

}  // namespace

TEST_CASE("conv2d forward, backward_data and backward_filter match the direct-loop reference") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(7);
  const conv_case cases[] = {
      {2, 3, 9, 9, 4, 3, 3, 1, 1, true},      // 3×3, same padding, RGB-like input
      {3, 5, 8, 10, 6, 1, 1, 1, 0, false},    // 1×1, non-square plane
      {2, 4, 11, 11, 8, 3, 3, 2, 1, true},    // 3×3 stride 2, odd plane
      {2, 6, 12, 12, 4, 1, 1, 2, 0, true},    // 1×1 stride 2 (downsampling shortcut)
      {1, 3, 16, 16, 5, 7, 7, 2, 3, true},    // 7×7 stride 2 (ImageNet stem)
      {2, 16, 7, 7, 32, 3, 3, 1, 0, false},   // 3×3 without padding
      {8, 16, 14, 14, 16, 3, 3, 1, 1, true},  // a RevNet coupling conv
      {2, 32, 8, 8, 16, 3, 3, 1, 1, false},   // K < C
  };
  for (const conv_case& g : cases) {
    CAPTURE(describe(g));
    const conv2d_params p{g.stride, g.padding};
    const tensor x = random_tensor({g.n, g.c, g.h, g.w}, rng);
    const tensor w = random_tensor({g.k, g.c, g.r, g.s}, rng);
    const tensor b = g.bias ? random_tensor({g.k}, rng) : tensor();

    const tensor y = cpu->conv2d_forward(x, w, b, p);
    const int64_t out_h = (g.h + 2 * g.padding - g.r) / g.stride + 1,
                  out_w = (g.w + 2 * g.padding - g.s) / g.stride + 1;
    REQUIRE(y.shape() == shape_t{g.n, g.k, out_h, out_w});
    CHECK(scaled_error(y, reference_conv2d_forward(x, w, b, p)) < 1e-5);

    const tensor dy = random_tensor(y.shape(), rng);
    const tensor dx = cpu->conv2d_backward_data(dy, w, x.shape(), p);
    REQUIRE(dx.shape() == x.shape());
    CHECK(scaled_error(dx, reference_conv2d_backward_data(dy, w, x.shape(), p)) < 1e-5);

    tensor dw = tensor::zeros(w.shape());
    tensor db = g.bias ? tensor::zeros({g.k}) : tensor();
    cpu->conv2d_backward_filter(x, dy, p, dw, db);
    CHECK(scaled_error(dw, reference_conv2d_backward_filter(x, dy, g.r, g.s, p)) < 1e-5);
    if (g.bias) CHECK(scaled_error(db, reference_conv2d_backward_bias(dy)) < 1e-5);
  }
}

TEST_CASE("conv2d gradients match central finite differences of L = sum(probe * y)") {
  auto cpu = make_cpu_backend(1);
  std::mt19937 rng(11);
  const conv2d_params p{2, 1};
  tensor x = random_tensor({2, 3, 6, 5}, rng);
  tensor w = random_tensor({4, 3, 3, 3}, rng);
  tensor b = random_tensor({4}, rng);
  const tensor probe = random_tensor(cpu->conv2d_forward(x, w, b, p).shape(), rng);
  auto loss = [&] { return dot(probe, cpu->conv2d_forward(x, w, b, p)); };

  const tensor dx = cpu->conv2d_backward_data(probe, w, x.shape(), p);
  tensor dw = tensor::zeros(w.shape()), db = tensor::zeros({4});
  cpu->conv2d_backward_filter(x, probe, p, dw, db);
  // L is linear in each argument, so the differences are exact up to fp32 round-off.
  CHECK(scaled_error(dx, numeric_gradient(x, 1e-2f, loss)) < 2e-3);
  CHECK(scaled_error(dw, numeric_gradient(w, 1e-2f, loss)) < 2e-3);
  CHECK(scaled_error(db, numeric_gradient(b, 1e-2f, loss)) < 2e-3);
}

TEST_CASE("conv2d_backward_filter accumulates into dw and db") {
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(3);
  const conv2d_params p{1, 1};
  const tensor x = random_tensor({4, 8, 10, 10}, rng);
  const tensor dy = random_tensor({4, 16, 10, 10}, rng);
  const tensor dw_start = random_tensor({16, 8, 3, 3}, rng), db_start = random_tensor({16}, rng);

  tensor dw_once = tensor::zeros({16, 8, 3, 3}), db_once = tensor::zeros({16});
  cpu->conv2d_backward_filter(x, dy, p, dw_once, db_once);

  tensor dw = dw_start.clone(), db = db_start.clone();
  cpu->conv2d_backward_filter(x, dy, p, dw, db);
  CHECK(scaled_error(difference(dw, dw_start), dw_once) < 1e-5);
  CHECK(scaled_error(difference(db, db_start), db_once) < 1e-5);
  cpu->conv2d_backward_filter(x, dy, p, dw, db);
  tensor twice_dw = tensor::empty(dw_once.shape()), twice_db = tensor::empty(db_once.shape());
  for (int64_t i = 0; i < dw_once.numel(); ++i) twice_dw.data()[i] = 2 * dw_once.data()[i];
  for (int64_t i = 0; i < db_once.numel(); ++i) twice_db.data()[i] = 2 * db_once.data()[i];
  CHECK(scaled_error(difference(dw, dw_start), twice_dw) < 1e-5);
  CHECK(scaled_error(difference(db, db_start), twice_db) < 1e-5);
}

TEST_CASE("conv2d gives the same results on one and on two threads") {
  auto one = make_cpu_backend(1);
  auto two = make_cpu_backend(2);
  std::mt19937 rng(5);
  const conv2d_params p{1, 1};
  const tensor x = random_tensor({8, 16, 14, 14}, rng), w = random_tensor({16, 16, 3, 3}, rng);
  const tensor b = random_tensor({16}, rng), dy = random_tensor({8, 16, 14, 14}, rng);
  CHECK(scaled_error(one->conv2d_forward(x, w, b, p), two->conv2d_forward(x, w, b, p)) < 1e-6);
  CHECK(scaled_error(one->conv2d_backward_data(dy, w, x.shape(), p),
                     two->conv2d_backward_data(dy, w, x.shape(), p)) < 1e-6);
  tensor dw1 = tensor::zeros(w.shape()), db1 = tensor::zeros({16}), dw2 = tensor::zeros(w.shape()),
         db2 = tensor::zeros({16});
  one->conv2d_backward_filter(x, dy, p, dw1, db1);
  two->conv2d_backward_filter(x, dy, p, dw2, db2);
  CHECK(scaled_error(dw1, dw2) < 1e-5);
  CHECK(scaled_error(db1, db2) < 1e-5);
}

TEST_CASE("two backends run convolutions on two threads at once, as two stage actors do") {
  std::mt19937 rng(6);
  const conv2d_params p{1, 1};
  const tensor x = random_tensor({8, 16, 14, 14}, rng), w = random_tensor({16, 16, 3, 3}, rng);
  const tensor expected = make_cpu_backend(1)->conv2d_forward(x, w, tensor(), p);
  double errors[2] = {1, 1};
  std::vector<std::thread> stages;
  for (int stage = 0; stage < 2; ++stage)
    stages.emplace_back([&, stage] {
      auto cpu = make_cpu_backend(1);
      double worst = 0;
      for (int step = 0; step < 20; ++step)
        worst = std::max(worst, scaled_error(cpu->conv2d_forward(x, w, tensor(), p), expected));
      errors[stage] = worst;
    });
  for (std::thread& t : stages) t.join();
  CHECK(errors[0] < 1e-6);
  CHECK(errors[1] < 1e-6);
}

TEST_CASE("conv2d preconditions are checked with messages that name the shapes") {
  auto cpu = make_cpu_backend(1);
  const tensor x = tensor::zeros({64, 3, 28, 28}), w1 = tensor::zeros({32, 1, 3, 3}),
               w3 = tensor::zeros({32, 3, 3, 3});
  CHECK_THROWS_WITH_AS(cpu->conv2d_forward(x, w1, tensor(), {1, 1}),
                       "conv2d_forward: x (64, 3, 28, 28) has 3 channels but w (32, 1, 3, 3) expects 1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->conv2d_forward(x, w3, tensor::zeros({16}), {1, 1}), doctest::Contains("b (16)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->conv2d_forward(tensor::zeros({3, 28, 28}), w3, tensor(), {1, 1}),
                       doctest::Contains("rank 3"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->conv2d_forward(tensor(), w3, tensor(), {1, 1}),
                       doctest::Contains("x is undefined"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->conv2d_forward(tensor::zeros({1, 3, 2, 2}), w3, tensor(), {1, 0}),
                       doctest::Contains("smaller than the kernel"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu->conv2d_forward(x, w3, tensor(), {0, 1}), doctest::Contains("stride 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      cpu->conv2d_backward_data(tensor::zeros({64, 32, 14, 14}), w3, x.shape(), {1, 1}),
      doctest::Contains("dy (64, 32, 14, 14) does not match the convolution's output (64, 32, 28, 28)"),
      std::invalid_argument);
  tensor dw = tensor::zeros({32, 3, 3, 3}), db = tensor::zeros({31});
  CHECK_THROWS_WITH_AS(cpu->conv2d_backward_filter(x, tensor::zeros({64, 32, 28, 28}), {1, 1}, dw, db),
                       doctest::Contains("db (31)"), std::invalid_argument);
}

TEST_CASE("backward_data right after backward_filter on the same dy, as a layer's backward runs them") {
  // The CPU engine keeps the dy that backward_filter reordered for the backward_data that follows;
  // a dy written in place between the two, or another convolution between them, must be read anew.
  auto cpu = make_cpu_backend(2);
  std::mt19937 rng(9);
  const conv2d_params p{1, 1};
  const tensor x = random_tensor({4, 16, 10, 10}, rng), w = random_tensor({16, 16, 3, 3}, rng);
  const tensor b = random_tensor({16}, rng), dy = random_tensor({4, 16, 10, 10}, rng);
  const std::vector<double> expected = reference_conv2d_backward_data(dy, w, x.shape(), p);
  tensor dw = tensor::zeros(w.shape()), db = tensor::zeros({16});

  cpu->conv2d_backward_filter(x, dy, p, dw, db);
  CHECK(scaled_error(cpu->conv2d_backward_data(dy, w, x.shape(), p), expected) < 1e-5);

  tensor doubled = cpu->from_host(dy);
  cpu->conv2d_backward_filter(x, doubled, p, dw, db);
  cpu->add_inplace(doubled, dy);
  std::vector<double> twice(expected);
  for (double& v : twice) v *= 2;
  CHECK(scaled_error(cpu->conv2d_backward_data(doubled, w, x.shape(), p), twice) < 1e-5);

  cpu->conv2d_backward_filter(x, dy, p, dw, db);
  const tensor other = random_tensor({4, 16, 10, 10}, rng);
  (void)cpu->conv2d_forward(other, w, b, p);  // its output takes the engine's dy slot
  CHECK(scaled_error(cpu->conv2d_backward_data(dy, w, x.shape(), p), expected) < 1e-5);
}
