// Inversion error of reversible blocks in bf16: a coupling's rebuild x₂ = y₁ − F(y₂) recomputes F
// with the same weights on the same fp32 input, so F's bf16 rounding cancels exactly and only the
// fp32 add and subtract remain: the error stays at fp32's. Stored in bf16 instead, y would carry
// 2^-9 relative errors into the rebuild; why tensors stay fp32 (docs/mixed_precision.md).
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "compute/backend.hpp"
#include "compute/blocks/coupling.hpp"
#include "compute/cpu/bf16_support.hpp"
#include "tests/backends/parity_measures.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// The inputs of a stage of three couplings, and their rebuilds from the stage's output by
/// inverting the blocks from the last: ‖x̃₂ − x₂‖/‖x₂‖ per block (x̃₁ = y₂ is exact). With
/// `bf16_storage` each block's output is rounded to bf16 before its inverse.
std::vector<double> inversion_errors(math_precision precision, bool bottleneck, bool bf16_storage) {
  auto be = make_cpu_backend(1, precision);
  std::mt19937 rng(11);
  std::vector<std::unique_ptr<coupling_block>> blocks;
  for (uint64_t b = 0; b < 3; ++b)
    blocks.push_back(std::make_unique<coupling_block>(
        *be, "c" + std::to_string(b), bottleneck ? conv_chain::bottleneck(8, 4, 8, 1) : conv_chain::basic(8),
        30 + b));
  std::vector<activation> inputs{{random_host({8, 8, 6, 6}, rng), random_host({8, 8, 6, 6}, rng)}};
  for (auto& block : blocks) inputs.push_back(block->forward(inputs.back(), pass::train, nullptr));
  std::vector<double> errors(blocks.size());
  for (std::size_t b = blocks.size(); b-- > 0;) {
    activation y = inputs[b + 1];
    if (bf16_storage)
      for (tensor* t : {&y.x1, &y.x2}) {
        *t = t->clone();
        for (int64_t i = 0; i < t->numel(); ++i) t->data()[i] = round_to_bf16(t->data()[i]);
      }
    errors[b] = relative_error({blocks[b]->inverse(y).x2}, {inputs[b].x2});
  }
  return errors;
}

}  // namespace

TEST_CASE("a coupling's rebuild in bf16 errs as little as in fp32, bf16 storage would not") {
  std::vector<math_precision> precisions = {math_precision::bf16_emulated};
  if (missing_bf16_instructions(cpu_flags()).empty()) precisions.push_back(math_precision::bf16);
  for (bool bottleneck : {false, true}) {
    const std::vector<double> fp32 = inversion_errors(math_precision::fp32, bottleneck, false);
    for (math_precision precision : precisions) {
      const std::vector<double> bf16 = inversion_errors(precision, bottleneck, false);
      const std::vector<double> stored = inversion_errors(precision, bottleneck, true);
      for (std::size_t b = 0; b < bf16.size(); ++b) {
        INFO(to_string(precision) << (bottleneck ? ", bottleneck F" : ", basic F") << ", block " << b
                                  << ": fp32 " << fp32[b] << ", bf16 " << bf16[b] << ", bf16-stored "
                                  << stored[b]);
        // fp32 round-off of (x₂ + F) − F, the same bound as the fp32 round trip (tests/compute).
        CHECK(fp32[b] < 1e-6);
        CHECK(bf16[b] < 1e-6);
        // y rounded to 8 bits: about u/√3 ≈ 2^-9.8 relative per value, far above fp32's.
        CHECK(stored[b] > 1e-4);
      }
    }
  }
}
