// The convolution engine keeps its converted weights (bf16 or blocked copies) between calls: every
// result equals, bit for bit, that of an engine converting on every call, whatever wrote the
// weights in between (a write through data(), through another handle of the buffer, a new buffer
// where a freed one was), and unchanged weights are converted once.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "compute/cpu/bf16_support.hpp"
#include "compute/cpu/conv2d_engine.hpp"
#include "tests/ops/op_test_helpers.hpp"

using namespace petra;
using namespace petra::test;

namespace {

struct engine_mode {
  std::string name;
  bool bf16;
  bool winograd;
};

std::vector<engine_mode> modes() {
  std::vector<engine_mode> m{{"fp32 direct", false, false}, {"fp32 Winograd", false, true}};
  if (missing_bf16_instructions(cpu_flags()).empty()) m.push_back({"bf16", true, false});
  return m;
}

// A 3×3 stride-1 convolution with bias at widths in blocks of 16 (Winograd's unit).
conv2d_geometry geometry() {
  conv2d_geometry g;
  g.n = 4, g.c = 16, g.h = 8, g.w = 8, g.k = 32, g.r = 3, g.s = 3, g.stride = 1, g.padding = 1, g.bias = true;
  return g;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) { return a == b; }

/// Two engines in one mode, one keeping converted weights, one converting on every call, run on
/// the same operands.
struct engine_pair {
  conv2d_engine kept, fresh;
  explicit engine_pair(const engine_mode& m)
      : kept(2, m.bf16, m.winograd, true), fresh(2, m.bf16, m.winograd, false) {}

  std::pair<std::vector<float>, std::vector<float>> forward(const conv2d_geometry& g, const tensor& x,
                                                            const tensor& w, const tensor& b) {
    tensor y1 = tensor::empty({g.n, g.k, g.p(), g.q()}), y2 = tensor::empty({g.n, g.k, g.p(), g.q()});
    kept.forward(g, x.data(), w, b.data(), y1.data());
    fresh.forward(g, x.data(), w, b.data(), y2.data());
    return {y1.to_vector(), y2.to_vector()};
  }
};

}  // namespace

TEST_CASE("conv2d engine: kept converted weights give the bits of converting on every call, across writes") {
  const conv2d_geometry g = geometry();
  for (const engine_mode& m : modes()) {
    CAPTURE(m.name);
    std::mt19937 rng(5);
    const tensor x = random_tensor({g.n, g.c, g.h, g.w}, rng), b = random_tensor({g.k}, rng);
    const tensor dy = random_tensor({g.n, g.k, g.p(), g.q()}, rng);
    tensor w = random_tensor({g.k, g.c, g.r, g.s}, rng);
    engine_pair e(m);

    const auto [first, first_ref] = e.forward(g, x, w, b);
    CHECK(same_bits(first, first_ref));
    const int64_t converted = e.kept.weight_conversions();
    CHECK(converted >= 1);  // these weights are converted (blocked or bf16 layouts) at least once

    // A layer's backward: filter then data, on the same dy.
    tensor dw1 = tensor::zeros(w.shape()), dw2 = tensor::zeros(w.shape());
    tensor db1 = tensor::zeros({g.k}), db2 = tensor::zeros({g.k});
    e.kept.backward_filter(g, x.data(), dy.data(), dw1.data(), db1.data());
    e.fresh.backward_filter(g, x.data(), dy.data(), dw2.data(), db2.data());
    CHECK(same_bits(dw1.to_vector(), dw2.to_vector()));
    tensor dx1 = tensor::empty(x.shape()), dx2 = tensor::empty(x.shape());
    e.kept.backward_data(g, dy.data(), w, dx1.data());
    e.fresh.backward_data(g, dy.data(), w, dx2.data());
    CHECK(same_bits(dx1.to_vector(), dx2.to_vector()));

    // Unchanged weights: the forward reuses its copy.
    const int64_t before_again = e.kept.weight_conversions();
    const auto [again, again_ref] = e.forward(g, x, w, b);
    CHECK(same_bits(again, again_ref));
    CHECK(same_bits(again, first));
    CHECK(e.kept.weight_conversions() == before_again);
    CHECK(e.kept.weight_reuses() >= 1);

    // An SGD-like step written through data(): the next forward sees the new weights.
    const std::vector<float> step = dw1.to_vector();
    for (int64_t i = 0; i < w.numel(); ++i) w.data()[i] -= 0.5f * step[static_cast<std::size_t>(i)];
    const auto [stepped, stepped_ref] = e.forward(g, x, w, b);
    CHECK(same_bits(stepped, stepped_ref));
    CHECK_FALSE(same_bits(stepped, first));
    CHECK(e.kept.weight_conversions() == before_again + 1);

    // A write through another handle of the same buffer (a reshaped view) is a write of the buffer.
    tensor flat = w.reshaped({w.numel()});
    flat.data()[0] += 1.f;
    const auto [viewed, viewed_ref] = e.forward(g, x, w, b);
    CHECK(same_bits(viewed, viewed_ref));
    CHECK_FALSE(same_bits(viewed, stepped));
  }
}

TEST_CASE("conv2d engine: two weight tensors of one geometry each keep their own converted copy") {
  const conv2d_geometry g = geometry();
  for (const engine_mode& m : modes()) {
    CAPTURE(m.name);
    std::mt19937 rng(6);
    const tensor x = random_tensor({g.n, g.c, g.h, g.w}, rng), b = random_tensor({g.k}, rng);
    const tensor w1 = random_tensor({g.k, g.c, g.r, g.s}, rng), w2 = random_tensor({g.k, g.c, g.r, g.s}, rng);
    engine_pair e(m);
    const auto [one, one_ref] = e.forward(g, x, w1, b);
    const auto [two, two_ref] = e.forward(g, x, w2, b);
    const auto [one_again, one_again_ref] = e.forward(g, x, w1, b);
    CHECK(same_bits(one, one_ref));
    CHECK(same_bits(two, two_ref));
    CHECK(same_bits(one_again, one_again_ref));
    CHECK(same_bits(one_again, one));
    CHECK_FALSE(same_bits(one, two));
    CHECK(e.kept.weight_conversions() == 2);
  }
}

TEST_CASE("conv2d engine: a new weight buffer where a freed one was is converted, never taken for the old") {
  // The allocator readily hands the freed block back for a buffer of the same size, and both
  // buffers are written as often (the same write version): only the buffer's identity tells them
  // apart.
  const conv2d_geometry g = geometry();
  for (const engine_mode& m : modes()) {
    CAPTURE(m.name);
    std::mt19937 rng(7);
    const tensor x = random_tensor({g.n, g.c, g.h, g.w}, rng), b = random_tensor({g.k}, rng);
    engine_pair e(m);
    std::vector<float> old_result;
    const float* old_address = nullptr;
    {
      const tensor w_old = random_tensor({g.k, g.c, g.r, g.s}, rng);
      old_address = w_old.data();
      old_result = e.forward(g, x, w_old, b).first;
    }
    const tensor w_new = random_tensor({g.k, g.c, g.r, g.s}, rng);
    if (w_new.data() == old_address) MESSAGE("the new weights took the freed buffer's address");
    const auto [result, reference] = e.forward(g, x, w_new, b);
    CHECK(same_bits(result, reference));
    CHECK_FALSE(same_bits(result, old_result));
  }
}
