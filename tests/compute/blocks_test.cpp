// Every block's backward against finite differences; coupling inverses and the fused backward.
#include <doctest/doctest.h>

#include "compute/blocks/coupling.hpp"
#include "compute/blocks/downsample.hpp"
#include "compute/blocks/head.hpp"
#include "compute/blocks/stem.hpp"
#include "tests/compute/gradcheck.hpp"

using namespace petra;
using petra::testing::check_block_gradients;
using petra::testing::random_activation;

namespace {

double relative_error(const tensor& a, const tensor& b) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = static_cast<double>(a.data()[i]) - b.data()[i];
    diff += d * d;
    norm += static_cast<double>(b.data()[i]) * b.data()[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

}  // namespace

TEST_CASE("stem (cifar and imagenet) backward matches finite differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(1);
  stem_block cifar(*be, "stem", 3, 4, false, 7);
  cifar.set_input_grad(true);
  check_block_gradients(cifar, random_activation({{4, 3, 6, 6}, {}}, rng), rng);
  stem_block imagenet(*be, "stem", 3, 4, true, 7);
  imagenet.set_input_grad(true);
  check_block_gradients(imagenet, random_activation({{4, 3, 12, 12}, {}}, rng), rng);
}

TEST_CASE("stem output shapes: split halves, imagenet stem divides by 4") {
  auto be = make_cpu_backend(1);
  stem_block imagenet(*be, "stem", 3, 8, true, 7);
  const activation_shape s = imagenet.output_shape({{2, 3, 32, 32}, {}});
  CHECK(s.x1 == shape_t{2, 8, 8, 8});
  CHECK(s.x2 == shape_t{2, 8, 8, 8});
}

TEST_CASE("coupling with basic and bottleneck F: backward matches finite differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(2);
  coupling_block basic(*be, "c", conv_chain::basic(3), 11);
  check_block_gradients(basic, random_activation({{4, 3, 5, 5}, {4, 3, 5, 5}}, rng), rng);
  coupling_block bottleneck(*be, "c", conv_chain::bottleneck(4, 2, 4, 1), 12);
  check_block_gradients(bottleneck, random_activation({{4, 4, 5, 5}, {4, 4, 5, 5}}, rng), rng);
}

TEST_CASE("downsampling blocks (basic and bottleneck) match finite differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(3);
  downsample_basic_block basic(*be, "d", 3, 5, 2, 13);
  check_block_gradients(basic, random_activation({{4, 3, 6, 6}, {4, 3, 6, 6}}, rng), rng);
  downsample_bottleneck_block bottleneck(*be, "d", 3, 4, 6, 2, 14);
  check_block_gradients(bottleneck, random_activation({{8, 3, 8, 8}, {8, 3, 8, 8}}, rng), rng);
  downsample_bottleneck_block stride1(*be, "d", 3, 4, 6, 1, 15);  // RevNet-50's first block
  check_block_gradients(stride1, random_activation({{4, 3, 6, 6}, {4, 3, 6, 6}}, rng), rng);
}

TEST_CASE("head backward matches finite differences") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(4);
  head_block head(*be, "head", 3, 5, 16);
  check_block_gradients(head, random_activation({{4, 3, 3, 3}, {4, 3, 3, 3}}, rng), rng);
}

TEST_CASE("coupling inverse rebuilds its input at fp32 round-off") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(5);
  for (bool bottleneck : {false, true}) {
    coupling_block c(*be, "c", bottleneck ? conv_chain::bottleneck(8, 4, 8, 1) : conv_chain::basic(8), 21);
    const activation x = random_activation({{8, 8, 6, 6}, {8, 8, 6, 6}}, rng);
    const activation y = c.forward(x, pass::train, nullptr);
    const activation back = c.inverse(y);
    CHECK(back.x1.shares_storage_with(y.x2));  // x1 = y2 exactly
    CHECK(relative_error(back.x2, x.x2) < 1e-5);
  }
}

TEST_CASE("fused backward_from_output equals inverse followed by the taped backward") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(6);
  coupling_block c(*be, "c", conv_chain::basic(4), 22);
  const activation x = random_activation({{4, 4, 5, 5}, {4, 4, 5, 5}}, rng);
  const activation y = c.forward(x, pass::train, nullptr);
  const activation dy = random_activation({{4, 4, 5, 5}, {4, 4, 5, 5}}, rng);

  std::vector<tensor> fused_grads, taped_grads;
  auto [rebuilt, dx_fused] = c.backward_from_output(y, dy);
  for (parameter* p : c.parameters()) fused_grads.push_back(p->grad.clone()), be->fill_zero(p->grad);

  tape t;
  c.forward(c.inverse(y), pass::recompute, &t);
  const activation dx_taped = c.backward(t, dy);
  for (parameter* p : c.parameters()) taped_grads.push_back(p->grad.clone());

  CHECK(relative_error(rebuilt.x2, x.x2) < 1e-5);
  CHECK(relative_error(dx_fused.x1, dx_taped.x1) < 1e-6);
  CHECK(relative_error(dx_fused.x2, dx_taped.x2) < 1e-6);
  for (std::size_t i = 0; i < fused_grads.size(); ++i)
    CHECK(relative_error(fused_grads[i], taped_grads[i]) < 1e-6);
}

TEST_CASE("non-reversible blocks refuse to invert, naming themselves") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(7);
  downsample_basic_block d(*be, "g2.b0", 2, 4, 2, 1);
  const activation y = random_activation({{2, 4, 2, 2}, {2, 4, 2, 2}}, rng);
  CHECK_THROWS_WITH_AS(d.inverse(y), doctest::Contains("g2.b0 (downsample) is not reversible"),
                       std::logic_error);
}

TEST_CASE("blocks reject a wrong stream structure with a clear message") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(8);
  coupling_block c(*be, "g1.b0", conv_chain::basic(2), 1);
  const activation one = random_activation({{2, 2, 3, 3}, {}}, rng);
  CHECK_THROWS_WITH_AS(c.forward(one, pass::train, nullptr), doctest::Contains("must be two streams"),
                       std::invalid_argument);
}
