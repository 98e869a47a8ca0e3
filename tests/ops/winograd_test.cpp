// petra's own Winograd convolutions (compute/cpu/winograd.hpp): the Toom-Cook matrices compute the
// 1-D correlations exactly (in double), the three passes match the direct-loop reference over
// paddings 0–2, non-square and partial tiles, with and without bias, the weight gradient adds into
// dw, the bits do not depend on the thread count, and geometries it does not handle are refused.
#include "compute/cpu/winograd.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "compute/cpu/winograd_matrices.hpp"
#include "tests/ops/op_test_helpers.hpp"
#include "tests/ops/reference_conv.hpp"

using namespace petra;
using namespace petra::test;

namespace {

conv2d_geometry geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t padding, bool bias) {
  conv2d_geometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.k = k, g.r = 3, g.s = 3, g.stride = 1, g.padding = padding,
  g.bias = bias;
  return g;
}

bool same_bits(const tensor& a, const tensor& b) {
  if (a.numel() != b.numel()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.data()[i] != b.data()[i]) return false;
  return true;
}

struct passes {
  tensor y, dx, dw, db;
};

passes run(cpu::winograd_conv& conv, const conv2d_geometry& g, const tensor& x, const tensor& w,
           const tensor& b, const tensor& dy, const tensor& dw0, int threads) {
  passes out;
  out.y = tensor::empty({g.n, g.k, g.p(), g.q()});
  conv.forward(g, x.data(), w.data(), g.bias ? b.data() : nullptr, out.y.data(), threads);
  out.dx = tensor::empty({g.n, g.c, g.h, g.w});
  conv.backward_data(g, dy.data(), w.data(), out.dx.data(), threads);
  out.dw = dw0.clone();
  out.db = tensor::zeros({g.k});
  conv.backward_filter(g, x.data(), dy.data(), out.dw.data(), g.bias ? out.db.data() : nullptr, threads);
  return out;
}

}  // namespace

TEST_CASE("Winograd F(4, 3) and F(3, 4) matrices give the exact 1-D correlation") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (const auto& [m, r] : {std::pair{4, 3}, std::pair{3, 4}}) {
    CAPTURE(m);
    const cpu::winograd_matrices f = cpu::winograd_f(m, r);
    REQUIRE(f.at.size() == static_cast<std::size_t>(m * 6));
    REQUIRE(f.g.size() == static_cast<std::size_t>(6 * r));
    REQUIRE(f.bt.size() == 36u);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> g(static_cast<std::size_t>(r)), d(6);
      for (double& v : g) v = uniform(rng);
      for (double& v : d) v = uniform(rng);
      std::vector<double> product(6);
      for (int i = 0; i < 6; ++i) {
        double gi = 0, di = 0;
        for (int k = 0; k < r; ++k)
          gi += f.g[static_cast<std::size_t>(i * r + k)] * g[static_cast<std::size_t>(k)];
        for (int a = 0; a < 6; ++a)
          di += f.bt[static_cast<std::size_t>(i * 6 + a)] * d[static_cast<std::size_t>(a)];
        product[static_cast<std::size_t>(i)] = gi * di;
      }
      for (int i = 0; i < m; ++i) {
        double y = 0, direct = 0;
        for (int j = 0; j < 6; ++j)
          y += f.at[static_cast<std::size_t>(i * 6 + j)] * product[static_cast<std::size_t>(j)];
        for (int k = 0; k < r; ++k)
          direct += g[static_cast<std::size_t>(k)] * d[static_cast<std::size_t>(i + k)];
        CHECK(y == doctest::Approx(direct).epsilon(1e-12));
      }
    }
  }
  CHECK_THROWS_WITH_AS(cpu::winograd_f(4, 4), doctest::Contains("m + r = 7"), std::invalid_argument);
  CHECK_THROWS_AS(cpu::winograd_f(0, 7), std::invalid_argument);
}

TEST_CASE("Winograd convolutions match the direct-loop reference, forward and backward") {
  std::mt19937 rng(29);
  // Paddings 0, 1 and 2; planes of 4×4 tiles, partial tiles (7, 5, 9) and a plane of one tile.
  const conv2d_geometry cases[] = {geometry(2, 16, 8, 8, 32, 1, true), geometry(3, 32, 7, 7, 16, 1, false),
                                   geometry(2, 16, 9, 5, 16, 0, true), geometry(2, 16, 6, 11, 32, 2, false),
                                   geometry(4, 64, 4, 4, 64, 1, true), geometry(1, 32, 14, 14, 48, 1, true)};
  for (const conv2d_geometry& g : cases) {
    CAPTURE(g.str());
    REQUIRE(cpu::winograd_conv::handles(g));
    const conv2d_params p{1, static_cast<int>(g.padding)};
    const tensor x = random_tensor({g.n, g.c, g.h, g.w}, rng), w = random_tensor({g.k, g.c, 3, 3}, rng);
    const tensor b = g.bias ? random_tensor({g.k}, rng) : tensor{};
    const tensor dy = random_tensor({g.n, g.k, g.p(), g.q()}, rng);
    const tensor dw0 = random_tensor(w.shape(), rng);  // the gradient adds into what is there
    cpu::winograd_conv conv;
    const passes out = run(conv, g, x, w, b, dy, dw0, 2);
    CHECK(scaled_error(out.y, reference_conv2d_forward(x, w, b, p)) < 1e-5);
    CHECK(scaled_error(out.dx, reference_conv2d_backward_data(dy, w, x.shape(), p)) < 1e-5);
    std::vector<double> dw = reference_conv2d_backward_filter(x, dy, 3, 3, p);
    for (std::size_t i = 0; i < dw.size(); ++i) dw[i] += dw0.data()[i];
    CHECK(scaled_error(out.dw, dw) < 1e-5);
    if (g.bias) CHECK(scaled_error(out.db, reference_conv2d_backward_bias(dy)) < 1e-6);
  }
}

TEST_CASE("Winograd convolutions give the same bits on one, two and three threads") {
  std::mt19937 rng(31);
  const conv2d_geometry g = geometry(4, 32, 12, 10, 48, 1, true);
  const tensor x = random_tensor({g.n, g.c, g.h, g.w}, rng), w = random_tensor({g.k, g.c, 3, 3}, rng);
  const tensor b = random_tensor({g.k}, rng), dy = random_tensor({g.n, g.k, g.p(), g.q()}, rng);
  const tensor dw0 = tensor::zeros(w.shape());
  cpu::winograd_conv conv;
  const passes one = run(conv, g, x, w, b, dy, dw0, 1);
  for (int threads : {2, 3}) {
    CAPTURE(threads);
    const passes more = run(conv, g, x, w, b, dy, dw0, threads);
    CHECK(same_bits(one.y, more.y));
    CHECK(same_bits(one.dx, more.dx));
    CHECK(same_bits(one.dw, more.dw));
    CHECK(same_bits(one.db, more.db));
  }
}

TEST_CASE("Winograd handles 3×3 stride-1 convolutions of whole blocks of 16 channels only") {
  CHECK(cpu::winograd_conv::handles(geometry(1, 16, 8, 8, 16, 1, false)));
  CHECK(cpu::winograd_conv::handles(geometry(1, 512, 4, 4, 512, 1, false)));
  CHECK_FALSE(cpu::winograd_conv::handles(geometry(1, 24, 8, 8, 16, 1, false)));  // not 16-channel blocks
  CHECK_FALSE(cpu::winograd_conv::handles(geometry(1, 16, 8, 8, 8, 1, false)));
  CHECK_FALSE(cpu::winograd_conv::handles(geometry(1, 16, 8, 8, 16, 3, false)));  // padding above 2
  conv2d_geometry strided = geometry(1, 16, 8, 8, 16, 1, false);
  strided.stride = 2;
  CHECK_FALSE(cpu::winograd_conv::handles(strided));
  conv2d_geometry pointwise = geometry(1, 16, 8, 8, 16, 0, false);
  pointwise.r = pointwise.s = 1;
  CHECK_FALSE(cpu::winograd_conv::handles(pointwise));
  CHECK_FALSE(cpu::winograd_conv::handles(geometry(1, 16, 1, 1, 16, 0, false)));  // no output
  // Where it pays: from 64 channels in and out.
  CHECK(cpu::winograd_conv::pays(geometry(32, 64, 32, 32, 64, 1, false)));
  CHECK(cpu::winograd_conv::pays(geometry(32, 512, 4, 4, 512, 1, false)));
  CHECK_FALSE(cpu::winograd_conv::pays(geometry(64, 32, 14, 14, 32, 1, false)));
  CHECK_FALSE(cpu::winograd_conv::pays(geometry(64, 64, 14, 14, 32, 1, false)));
  CHECK_FALSE(cpu::winograd_conv::pays(geometry(64, 80, 14, 14, 72, 1, false)));  // 72 is no block of 16
}
