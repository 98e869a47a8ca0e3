// The RevViT blocks and a whole RevViT on a simulated device against the CPU, bit for bit.
#include <doctest/doctest.h>

#include <cstring>

#include "compute/blocks/patch_stem.hpp"
#include "compute/blocks/token_head.hpp"
#include "compute/blocks/transformer.hpp"
#include "compute/models/revvit.hpp"
#include "tests/sim/block_checks.hpp"

using namespace petra;
using namespace petra::testing;
using petra::test::random_tensor;

TEST_CASE("RevViT blocks on sim equal the CPU in every pass") {
  sim_run run;
  {
    auto sim = run.make(0);
    auto cpu = make_cpu_backend(1);
    std::mt19937 rng(70);
    patch_stem_block stem_cpu(*cpu, "stem", 2, 8, 8, 4, 8, 3), stem_sim(*sim, "stem", 2, 8, 8, 4, 8, 3);
    check_block(stem_cpu, stem_sim, *sim, {{3, 2, 8, 8}, {}}, rng);
    transformer_block block_cpu(*cpu, "b0", 8, 2, 32, 3), block_sim(*sim, "b0", 8, 2, 32, 3);
    check_block(block_cpu, block_sim, *sim, {{3, 5, 8}, {3, 5, 8}}, rng);
    token_head_block head_cpu(*cpu, "head", 8, 4, 3), head_sim(*sim, "head", 8, 4, 3);
    check_block(head_cpu, head_sim, *sim, {{3, 5, 8}, {3, 5, 8}}, rng);
  }
  CHECK(run.bytes_in_use(0) == 0);
}

TEST_CASE("a whole RevViT on sim: forward, loss and backward equal the CPU bit for bit") {
  sim_run run;
  {
    auto sim = run.make(0, 2);
    auto cpu = make_cpu_backend(2);
    revvit_spec spec;
    spec.in_channels = 1, spec.height = 8, spec.width = 8;
    spec.depth = 3, spec.embed_dim = 8, spec.heads = 2, spec.patch = 2;
    auto net_cpu = build_revvit(spec, *cpu, 5), net_sim = build_revvit(spec, *sim, 5);
    std::mt19937 rng(71);
    const tensor images = random_tensor({3, 1, 8, 8}, rng);
    const std::vector<int32_t> labels = {3, 1, 4};
    check_network_step(*cpu, *sim, net_cpu, net_sim, images, labels);
  }
  CHECK(run.bytes_in_use(0) == 0);
}
