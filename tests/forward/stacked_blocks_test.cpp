// Stacked tangents, block by block and backend by backend: a block's JVP along m tangents stacked
// along the batch gives its JVP along each alone (the primal bit for bit), in recompute (batch
// statistics, so batch norm's tangent goes per group) and eval mode, with and without a parameter
// tangent (which belongs to every group).
#include <doctest/doctest.h>

#include <functional>
#include <memory>

#include "compute/backend_factory.hpp"
#include "compute/blocks/aux_head.hpp"
#include "compute/blocks/coupling.hpp"
#include "compute/blocks/downsample.hpp"
#include "compute/blocks/head.hpp"
#include "compute/blocks/patch_stem.hpp"
#include "compute/blocks/stem.hpp"
#include "compute/blocks/token_head.hpp"
#include "compute/blocks/transformer.hpp"
#include "compute/sim/sim_devices.hpp"
#include "tests/compute/gradcheck.hpp"
#include "tests/forward/stacked_check.hpp"
#include "tests/skip.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

activation to_device(backend& be, const activation& host) {
  return {be.from_host(host.x1), host.x2.defined() ? be.from_host(host.x2) : tensor{}};
}

activation random_direction_like(const activation_shape& s, std::mt19937& rng) {
  return {random_direction(s.x1, rng), s.x2.empty() ? tensor{} : random_direction(s.x2, rng)};
}

/// The stacked-vs-alone check of block `b` (on `be`) at an input of shape `in`.
void check_block(backend& be, block& b, const activation_shape& in, std::mt19937& rng, match how) {
  INFO(b.name() << " (" << b.kind() << ") on " << be.where().str());
  const activation x = to_device(be, random_activation(in, rng));
  b.forward(x, pass::train, nullptr);  // running statistics other than the initial ones, for eval
  parameter_tangents theta_dot;
  for (parameter* p : b.parameters())
    theta_dot.set(*p, be.from_host(random_direction(p->value.shape(), rng)));
  for (int64_t m : {1, 3}) {
    std::vector<activation> tangents;
    for (int64_t g = 0; g < m; ++g) tangents.push_back(to_device(be, random_direction_like(in, rng)));
    for (pass mode : {pass::recompute, pass::eval})
      for (bool with_parameters : {false, true}) {
        CAPTURE(m);
        CAPTURE(static_cast<int>(mode));
        CAPTURE(with_parameters);
        const parameter_tangents none, &along = with_parameters ? theta_dot : none;
        std::vector<activation> alone;
        activation y_alone;
        for (const activation& t : tangents) {
          auto [y, y_dot] = b.jvp(x, t, mode, nullptr, along);
          alone.push_back(y_dot);
          y_alone = y;
        }
        const auto [y, stacked] = b.jvp(x, stack_tangents(be, tangents), mode, nullptr, along);
        check_groups(be, y, std::vector<activation>{y_alone}, match::bits);
        check_groups(be, stacked, alone, how);
      }
  }
}

/// Every block kind on `be`.
void check_every_block(backend& be, match how) {
  std::mt19937 rng(71);
  stem_block cifar(be, "stem", 3, 4, false, 7);
  check_block(be, cifar, {{2, 3, 6, 6}, {}}, rng, how);
  stem_block imagenet(be, "stem", 3, 4, true, 7);
  check_block(be, imagenet, {{2, 3, 8, 8}, {}}, rng, how);
  coupling_block basic(be, "c", conv_chain::basic(3), 11);
  check_block(be, basic, {{2, 3, 5, 5}, {2, 3, 5, 5}}, rng, how);
  coupling_block bottleneck(be, "c", conv_chain::bottleneck(4, 2, 4, 1), 12);
  check_block(be, bottleneck, {{2, 4, 5, 5}, {2, 4, 5, 5}}, rng, how);
  downsample_basic_block down(be, "d", 3, 5, 2, 13);
  check_block(be, down, {{2, 3, 6, 6}, {2, 3, 6, 6}}, rng, how);
  downsample_bottleneck_block down_bottleneck(be, "d", 3, 4, 6, 2, 14);
  check_block(be, down_bottleneck, {{2, 3, 8, 8}, {2, 3, 8, 8}}, rng, how);
  head_block head(be, "head", 3, 5, 16);
  check_block(be, head, {{2, 3, 3, 3}, {2, 3, 3, 3}}, rng, how);
  aux_head_block aux(be, "aux", 3, 4, 5, 17);
  check_block(be, aux, {{2, 3, 4, 4}, {2, 3, 4, 4}}, rng, how);
  patch_stem_block patches(be, "stem", 2, 8, 8, 4, 6, 18);
  check_block(be, patches, {{2, 2, 8, 8}, {}}, rng, how);
  transformer_block transformer(be, "b0", 8, 2, 16, 19);
  check_block(be, transformer, {{2, 5, 8}, {2, 5, 8}}, rng, how);
  token_head_block tokens(be, "head", 4, 5, 20);
  check_block(be, tokens, {{2, 5, 4}, {2, 5, 4}}, rng, how);
}

}  // namespace

// On the CPU and the simulated device the stacked tangents came out bit for bit at these shapes; the
// check allows 1e-6 since nothing promises a GEMM sums a bigger batch in the same order.
TEST_CASE("every block kind on the CPU: m stacked tangents = m alone (1e-6: the convolutions' GEMMs)") {
  auto be = make_cpu_backend(1);
  check_every_block(*be, match::close);
}

TEST_CASE("every block kind on a simulated device: m stacked tangents = m alone") {
  backend_options o;
  o.sim = std::make_shared<sim_devices>();
  auto be = make_backend(device{device_type::sim, 0}, o);
  check_every_block(*be, match::close);
}

TEST_CASE("every block kind on cuda:0: m stacked tangents = m alone") {
  std::string why;
  if (!cuda_usable(&why)) PETRA_SKIP("no usable GPU: " + why);
  backend_options o;
  o.deterministic = true;
  auto be = make_backend(device{device_type::cuda, 0}, o);
  check_every_block(*be, match::near);
}

TEST_CASE("a stacked tangent with another m in each stream is refused, naming the block") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(72);
  coupling_block c(*be, "g1.b0", conv_chain::basic(2), 1);
  const activation x = random_activation({{2, 2, 3, 3}, {2, 2, 3, 3}}, rng);
  CHECK_THROWS_WITH_AS(
      c.jvp(x, {tensor::zeros({4, 2, 3, 3}), tensor::zeros({6, 2, 3, 3})}, pass::recompute, nullptr),
      doctest::Contains("g1.b0 (coupling): the input tangent's x2 (6, 2, 3, 3)"), std::invalid_argument);
}
