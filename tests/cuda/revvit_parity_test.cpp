// The RevViT blocks built with the same seed on the CPU and on the GPU: forward, backward, inverse
// and the fused backward_from_output agree, within the bounds of the RevNet blocks' parity test.
#include <doctest/doctest.h>

#include "compute/blocks/patch_stem.hpp"
#include "compute/blocks/token_head.hpp"
#include "compute/blocks/transformer.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

// A transformer block chains ~15 ops (layer norms, four projections, two batched matmuls, the
// softmax, the MLP): twice the RevNet blocks' bounds (1e-4, 3e-4). No ReLU kinks: GELU is smooth.
constexpr double forward_tolerance = 2e-4;
constexpr double gradient_tolerance = 6e-4;

void check_parity(block& on_cpu, block& on_gpu, backend& gpu, const activation_shape& x_shape,
                  std::mt19937& rng) {
  INFO(on_cpu.name() << " (" << on_cpu.kind() << ") at " << x_shape.str());
  const activation x = random_pair(x_shape, rng), dy = random_pair(on_cpu.output_shape(x_shape), rng);
  const activation xg = to_gpu(gpu, x), dyg = to_gpu(gpu, dy);
  tape t, tg;
  const activation y = on_cpu.forward(x, pass::train, &t), yg = on_gpu.forward(xg, pass::train, &tg);
  CHECK(gap(gpu, yg, y) < forward_tolerance);
  CHECK(gap(gpu, on_gpu.backward(tg, dyg), on_cpu.backward(t, dy)) < gradient_tolerance);
  CHECK(gradient_gap(gpu, on_gpu, on_cpu) < gradient_tolerance);
  if (on_cpu.reversible()) {
    CHECK(gap(gpu, on_gpu.inverse(yg), on_cpu.inverse(y)) < forward_tolerance);
    auto [rebuilt, dx] = on_cpu.backward_from_output(y, dy);
    auto [rebuilt_g, dx_g] = on_gpu.backward_from_output(yg, dyg);
    CHECK(gap(gpu, rebuilt_g, rebuilt) < forward_tolerance);
    CHECK(gap(gpu, dx_g, dx) < gradient_tolerance);
    CHECK(gradient_gap(gpu, on_gpu, on_cpu) < gradient_tolerance);
  }
}

}  // namespace

TEST_CASE("RevViT blocks (patch stem, transformer block, token head) match the CPU in every pass") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(26);
  patch_stem_block stem_cpu(*be.cpu, "stem", 3, 16, 16, 4, 32, 7),
      stem_gpu(*be.gpu, "stem", 3, 16, 16, 4, 32, 7);
  stem_cpu.set_input_grad(true);
  stem_gpu.set_input_grad(true);
  check_parity(stem_cpu, stem_gpu, *be.gpu, {{4, 3, 16, 16}, {}}, rng);
  transformer_block block_cpu(*be.cpu, "b0", 32, 4, 128, 8), block_gpu(*be.gpu, "b0", 32, 4, 128, 8);
  check_parity(block_cpu, block_gpu, *be.gpu, {{4, 17, 32}, {4, 17, 32}}, rng);
  token_head_block head_cpu(*be.cpu, "head", 32, 10, 9), head_gpu(*be.gpu, "head", 32, 10, 9);
  check_parity(head_cpu, head_gpu, *be.gpu, {{4, 17, 32}, {4, 17, 32}}, rng);
}
