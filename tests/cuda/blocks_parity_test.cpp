// Every block, and whole RevNets, built with the same seed on the CPU and on the GPU: forward,
// backward, inverse and the fused backward_from_output agree; couplings invert on the GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "compute/blocks/coupling.hpp"
#include "compute/blocks/downsample.hpp"
#include "compute/blocks/head.hpp"
#include "compute/blocks/stem.hpp"
#include "compute/models/revnet.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

// A block chains up to ~8 ops (conv, BN, ReLU, add); its forward keeps the op bound, its
// gradients get a little more room for BN's backward and ReLU kinks within round-off of 0.
constexpr double block_forward_tolerance = 1e-4;
constexpr double block_gradient_tolerance = 3e-4;
// Whole networks: errors compound over the depth.
constexpr double network_tolerance = 1e-3;
// Gradients are not continuous at a ReLU's kink: an input within round-off of 0 may land on
// either side on two backends, and one such element changes the gradients by about
// 1/sqrt(elements of its activation) of their norm. RevNet-18 at batch 8 has 32768 elements per
// half at 4×4: one switch moves its gradients ~4e-3 (on the CPU, a one-ulp change of the input
// moved them 1.4e-3 at batch 8, 4e-4 at batch 32, nothing at batch 16). The bound allows two
// switches in the narrowest activation, and four times what a one-ulp input change does on the CPU.
constexpr double kinks_allowed = 2;
constexpr double conditioning_factor = 4;

double buffer_gap(backend& gpu, block& on_gpu, block& on_cpu) {
  std::vector<tensor> a, b;
  for (const buffer_ref& r : on_gpu.buffers()) a.push_back(gpu.to_host(*r.value));
  for (const buffer_ref& r : on_cpu.buffers()) b.push_back(*r.value);
  return relative_error(a, b);
}

/// Every parameter gradient of a freshly built network (seed 5) after one forward and backward.
std::vector<tensor> network_gradients(const revnet_spec& spec, backend& be, const activation& x,
                                      const std::vector<int32_t>& labels) {
  auto blocks = build_revnet(spec, be, 5);
  std::vector<tape> tapes(blocks.size());
  activation h = x;
  for (std::size_t i = 0; i < blocks.size(); ++i) h = blocks[i]->forward(h, pass::train, &tapes[i]);
  tensor dlogits;
  int64_t correct = 0;
  be.softmax_cross_entropy(h.x1, labels, &dlogits, &correct);
  activation d{dlogits, {}};
  for (std::size_t i = blocks.size(); i-- > 0;) d = blocks[i]->backward(tapes[i], d);
  std::vector<tensor> grads;
  for (auto& b : blocks)
    for (parameter* p : b->parameters()) grads.push_back(p->grad.clone());
  return grads;
}

/// How far the CPU's gradients move when every input element moves by one ulp (alternately up
/// and down): the network's own round-off sensitivity, which no backend can beat.
double gradient_change_from_one_ulp(const revnet_spec& spec, backend& cpu, const activation& x,
                                    const std::vector<int32_t>& labels) {
  activation nudged{x.x1.clone(), x.x2.defined() ? x.x2.clone() : tensor{}};
  for (tensor* t : {&nudged.x1, &nudged.x2}) {
    if (!t->defined()) continue;
    for (int64_t i = 0; i < t->numel(); ++i)
      t->data()[i] = std::nextafter(t->data()[i], i % 2 ? HUGE_VALF : -HUGE_VALF);
  }
  return relative_error(network_gradients(spec, cpu, nudged, labels),
                        network_gradients(spec, cpu, x, labels));
}

/// The same block on both backends, from the same seed: every pass agrees.
void check_block_parity(block& on_cpu, block& on_gpu, backend& gpu, const activation_shape& x_shape,
                        std::mt19937& rng) {
  INFO(on_cpu.name() << " (" << on_cpu.kind() << ") at " << x_shape.str());
  const activation x = random_pair(x_shape, rng);
  const activation xg = to_gpu(gpu, x);
  tape t, tg;
  const activation y = on_cpu.forward(x, pass::train, &t);
  const activation yg = on_gpu.forward(xg, pass::train, &tg);
  CHECK(gap(gpu, yg, y) < block_forward_tolerance);
  CHECK(buffer_gap(gpu, on_gpu, on_cpu) < block_forward_tolerance);

  const activation dy = random_pair(on_cpu.output_shape(x_shape), rng);
  const activation dyg = to_gpu(gpu, dy);
  const activation dx = on_cpu.backward(t, dy);
  const activation dxg = on_gpu.backward(tg, dyg);
  CHECK(gap(gpu, dxg, dx) < block_gradient_tolerance);
  CHECK(gradient_gap(gpu, on_gpu, on_cpu) < block_gradient_tolerance);

  CHECK(gap(gpu, on_gpu.forward(xg, pass::eval, nullptr), on_cpu.forward(x, pass::eval, nullptr)) <
        block_forward_tolerance);

  if (on_cpu.reversible()) {
    CHECK(gap(gpu, on_gpu.inverse(yg), on_cpu.inverse(y)) < block_forward_tolerance);
    auto [rebuilt, dx_fused] = on_cpu.backward_from_output(y, dy);
    auto [rebuilt_g, dx_fused_g] = on_gpu.backward_from_output(yg, dyg);
    CHECK(gap(gpu, rebuilt_g, rebuilt) < block_forward_tolerance);
    CHECK(gap(gpu, dx_fused_g, dx_fused) < block_gradient_tolerance);
    CHECK(gradient_gap(gpu, on_gpu, on_cpu) < block_gradient_tolerance);  // both accumulated twice
  }
}

}  // namespace

TEST_CASE("stem blocks (CIFAR and ImageNet) match the CPU") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(20);
  for (bool imagenet : {false, true}) {
    stem_block on_cpu(*be.cpu, "stem", 3, 8, imagenet, 7), on_gpu(*be.gpu, "stem", 3, 8, imagenet, 7);
    on_cpu.set_input_grad(true);
    on_gpu.set_input_grad(true);
    check_block_parity(on_cpu, on_gpu, *be.gpu, {{4, 3, 16, 16}, {}}, rng);
  }
}

TEST_CASE("coupling blocks (basic and bottleneck F) match the CPU in every pass") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(21);
  coupling_block basic_cpu(*be.cpu, "c", conv_chain::basic(8), 11),
      basic_gpu(*be.gpu, "c", conv_chain::basic(8), 11);
  check_block_parity(basic_cpu, basic_gpu, *be.gpu, {{8, 8, 6, 6}, {8, 8, 6, 6}}, rng);
  coupling_block bottleneck_cpu(*be.cpu, "c", conv_chain::bottleneck(8, 4, 8, 1), 12);
  coupling_block bottleneck_gpu(*be.gpu, "c", conv_chain::bottleneck(8, 4, 8, 1), 12);
  check_block_parity(bottleneck_cpu, bottleneck_gpu, *be.gpu, {{8, 8, 6, 6}, {8, 8, 6, 6}}, rng);
}

TEST_CASE("downsampling blocks (basic and bottleneck) match the CPU") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(22);
  downsample_basic_block basic_cpu(*be.cpu, "d", 4, 8, 2, 13), basic_gpu(*be.gpu, "d", 4, 8, 2, 13);
  check_block_parity(basic_cpu, basic_gpu, *be.gpu, {{8, 4, 8, 8}, {8, 4, 8, 8}}, rng);
  downsample_bottleneck_block bottleneck_cpu(*be.cpu, "d", 4, 4, 8, 2, 14);
  downsample_bottleneck_block bottleneck_gpu(*be.gpu, "d", 4, 4, 8, 2, 14);
  check_block_parity(bottleneck_cpu, bottleneck_gpu, *be.gpu, {{8, 4, 8, 8}, {8, 4, 8, 8}}, rng);
}

TEST_CASE("head block matches the CPU") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(23);
  head_block on_cpu(*be.cpu, "head", 8, 10, 16), on_gpu(*be.gpu, "head", 8, 10, 16);
  check_block_parity(on_cpu, on_gpu, *be.gpu, {{8, 8, 4, 4}, {8, 8, 4, 4}}, rng);
}

TEST_CASE("coupling inverse on the GPU rebuilds its input at fp32 round-off") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(24);
  for (bool bottleneck : {false, true}) {
    coupling_block c(*be.gpu, "c", bottleneck ? conv_chain::bottleneck(8, 4, 8, 1) : conv_chain::basic(8),
                     21);
    const activation x = random_pair({{8, 8, 6, 6}, {8, 8, 6, 6}}, rng);
    const activation xg = to_gpu(*be.gpu, x);
    const activation y = c.forward(xg, pass::train, nullptr);
    const activation back = c.inverse(y);
    CHECK(back.x1.shares_storage_with(y.x2));  // x1 = y2 exactly
    CHECK(relative_error({be.gpu->to_host(back.x2)}, {x.x2}) < 1e-5);
  }
}

TEST_CASE("whole RevNets (tiny, fashion_small, revnet18): logits, loss and every gradient match the CPU") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(25);
  for (const std::string arch : {"tiny", "fashion_small", "revnet18"}) {
    INFO(arch);
    const revnet_spec spec = revnet_preset(arch);
    auto cpu_blocks = build_revnet(spec, *be.cpu, 5);
    auto gpu_blocks = build_revnet(spec, *be.gpu, 5);
    const int64_t batch = 8;
    const activation x = random_pair(input_shape(spec, batch), rng);
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<int32_t>(rng() % spec.num_classes));

    // The CPU's own sensitivity: the same network, its input one ulp away in every element.
    const double floor = gradient_change_from_one_ulp(spec, *be.cpu, x, labels);

    std::vector<tape> tapes(cpu_blocks.size()), tapes_g(gpu_blocks.size());
    activation h = x, hg = to_gpu(*be.gpu, x);
    int64_t narrowest = h.x1.numel();
    for (std::size_t i = 0; i < cpu_blocks.size(); ++i) {
      h = cpu_blocks[i]->forward(h, pass::train, &tapes[i]);
      hg = gpu_blocks[i]->forward(hg, pass::train, &tapes_g[i]);
      if (i + 1 < cpu_blocks.size()) narrowest = std::min(narrowest, h.x1.numel());  // not the logits
    }
    const double one_kink = 1 / std::sqrt(static_cast<double>(narrowest));
    const double tolerance =
        std::max({network_tolerance, conditioning_factor * floor, kinks_allowed * one_kink});
    MESSAGE(arch << ": gradients move by " << floor << " on the CPU for a one-ulp input change, one ReLU "
                 << "switch in the narrowest activation by ~" << one_kink << "; bound " << tolerance);
    CHECK(gap(*be.gpu, hg, h) < network_tolerance);
    tensor dlogits, dlogits_g;
    int64_t correct = 0, correct_g = 0;
    const float loss = be.cpu->softmax_cross_entropy(h.x1, labels, &dlogits, &correct);
    const float loss_g = be.gpu->softmax_cross_entropy(hg.x1, labels, &dlogits_g, &correct_g);
    CHECK(loss_g == doctest::Approx(loss).epsilon(network_tolerance));
    activation d{dlogits, {}}, dg{dlogits_g, {}};
    for (std::size_t i = cpu_blocks.size(); i-- > 0;) {
      d = cpu_blocks[i]->backward(tapes[i], d);
      dg = gpu_blocks[i]->backward(tapes_g[i], dg);
    }
    std::vector<tensor> grads, grads_g, buffers, buffers_g;
    for (std::size_t i = 0; i < cpu_blocks.size(); ++i) {
      for (parameter* p : cpu_blocks[i]->parameters()) grads.push_back(p->grad);
      for (parameter* p : gpu_blocks[i]->parameters()) grads_g.push_back(be.gpu->to_host(p->grad));
      for (const buffer_ref& r : cpu_blocks[i]->buffers()) buffers.push_back(*r.value);
      for (const buffer_ref& r : gpu_blocks[i]->buffers()) buffers_g.push_back(be.gpu->to_host(*r.value));
    }
    const double gradient_error = relative_error(grads_g, grads);
    MESSAGE(arch << ": GPU gradients against the CPU's: " << gradient_error);
    CHECK(gradient_error < tolerance);
    CHECK(relative_error(buffers_g, buffers) < network_tolerance);
  }
}
