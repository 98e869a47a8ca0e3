// Every block's forward mode: against central differences along an input and parameter
// direction, against the block's backward by the adjoint identity (run on the JVP's own tape),
// and its primal against the forward, bit for bit.
#include <doctest/doctest.h>

#include "compute/blocks/coupling.hpp"
#include "compute/blocks/downsample.hpp"
#include "compute/blocks/head.hpp"
#include "compute/blocks/stem.hpp"
#include "tests/compute/jvp_check.hpp"

using namespace petra;
using namespace petra::testing;

TEST_CASE("stem (cifar and imagenet): JVP matches differences and the backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(41);
  stem_block cifar(*be, "stem", 3, 4, false, 7);
  cifar.set_input_grad(true);
  check_block_jvps(cifar, random_activation({{4, 3, 6, 6}, {}}, rng), rng);
  stem_block imagenet(*be, "stem", 3, 4, true, 7);
  imagenet.set_input_grad(true);
  check_block_jvps(imagenet, random_activation({{4, 3, 12, 12}, {}}, rng), rng);
}

TEST_CASE("coupling (basic and bottleneck F): JVP matches differences and the backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(42);
  coupling_block basic(*be, "c", conv_chain::basic(3), 11);
  check_block_jvps(basic, random_activation({{4, 3, 5, 5}, {4, 3, 5, 5}}, rng), rng);
  coupling_block bottleneck(*be, "c", conv_chain::bottleneck(4, 2, 4, 1), 12);
  check_block_jvps(bottleneck, random_activation({{4, 4, 5, 5}, {4, 4, 5, 5}}, rng), rng);
}

TEST_CASE("downsampling (basic, bottleneck, stride 1): JVP matches differences and the backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(43);
  downsample_basic_block basic(*be, "d", 3, 5, 2, 13);
  check_block_jvps(basic, random_activation({{4, 3, 6, 6}, {4, 3, 6, 6}}, rng), rng);
  downsample_bottleneck_block bottleneck(*be, "d", 3, 4, 6, 2, 14);
  check_block_jvps(bottleneck, random_activation({{8, 3, 8, 8}, {8, 3, 8, 8}}, rng), rng);
  downsample_bottleneck_block stride1(*be, "d", 3, 4, 6, 1, 15);
  check_block_jvps(stride1, random_activation({{4, 3, 6, 6}, {4, 3, 6, 6}}, rng), rng);
}

TEST_CASE("head: JVP matches differences and the backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(44);
  head_block head(*be, "head", 3, 5, 16);
  check_block_jvps(head, random_activation({{4, 3, 3, 3}, {4, 3, 3, 3}}, rng), rng);
}

TEST_CASE("a training-mode JVP updates the running statistics once, as the forward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(45);
  coupling_block by_forward(*be, "c", conv_chain::basic(3), 11), by_jvp(*be, "c", conv_chain::basic(3), 11);
  const activation x = random_activation({{4, 3, 5, 5}, {4, 3, 5, 5}}, rng);
  const activation y = by_forward.forward(x, pass::train, nullptr);
  const auto [y_jvp, y_dot] = by_jvp.jvp(x, random_direction_of(x, rng), pass::train, nullptr);
  check_same_bits(y, y_jvp);
  const auto a = by_forward.buffers(), b = by_jvp.buffers();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].value->to_vector() == b[i].value->to_vector());
}

TEST_CASE("in eval mode (running statistics) a block's JVP matches differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(47);
  downsample_basic_block d(*be, "d", 3, 5, 2, 13);
  const activation x = random_activation({{4, 3, 6, 6}, {4, 3, 6, 6}}, rng);
  d.forward(x, pass::train, nullptr);  // running statistics other than the initial ones
  const activation x_dot = random_direction_of(x, rng);
  const auto [y, y_dot] = d.jvp(x, x_dot, pass::eval, nullptr);
  check_same_bits(y, d.forward(x, pass::eval, nullptr));
  const activation u = random_activation({y.x1.shape(), y.x2.shape()}, rng);
  check_directional_derivative(
      [&](double s) { return dot(d.forward(step_along(x, s, x_dot), pass::eval, nullptr), u); },
      dot_or_zero(y_dot, u));
}

TEST_CASE("a tangent whose shape is not the input's is refused, naming the block") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(46);
  coupling_block c(*be, "g1.b0", conv_chain::basic(2), 1);
  const activation x = random_activation({{2, 2, 3, 3}, {2, 2, 3, 3}}, rng);
  CHECK_THROWS_WITH_AS(c.jvp(x, {tensor::zeros({2, 2, 3, 4}), tensor{}}, pass::recompute, nullptr),
                       doctest::Contains("g1.b0 (coupling): the input tangent's x1 (2, 2, 3, 4)"),
                       std::invalid_argument);
}
