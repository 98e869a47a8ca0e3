// runtime.precision: bf16 on the GPU's tensor cores against the CPU's bf16 (bf16_emulated: the
// same bf16 operands on any CPU), op by op within a derived elementwise bound, and a whole RevNet's
// gradients within twice what bf16 itself moves them on the CPU.
//
// The bound, per result element, against the CPU: both sides multiply the same bf16 operands (the
// GPU rounds them as the CPU does, bit for bit: bf16_test.cpp), and a product of two bf16 values
// is exact in fp32, so the two differ only in
//  - the sum: the CPU adds the n products in fp32 (≤ γₙ·Σ|p|, γₙ = n·2^-24/(1 − n·2^-24)); tensor
//    cores add blocks of products with fp32 adders that align to the block's largest term and
//    truncate (≤ 2^-22 per product: γ'ₙ = n·2^-22/(1 − n·2^-22));
//  - a convolution's output: cuDNN writes it in bf16 (conv2d_bf16.cpp), one more rounding
//    ≤ u·(1 + γ'ₙ)·Σ|p|, u = 2^-8; a GEMM's is fp32 (none);
//  - the fp32 adds of a bias or into an accumulated gradient, at most two per side: 4·2^-24.
// Σ|p| ≤ (1 + u)²·Σ|aᵢbᵢ| over the unrounded operands, which is the case run in fp32 on |inputs|
// (M, itself ≥ (1 − γₙ)·Σ|aᵢbᵢ|): |gpu − cpu| ≤ factor·M with the factor of bound_factor().
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/models/revnet.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

constexpr double u = 1.0 / 256;

double gamma_of(double n, double unit) { return n * unit / (1 - n * unit); }

/// The elementwise bound's factor for a sum of `n` products (see the top of this file).
double bound_factor(int64_t n, bool output_in_bf16) {
  const double cpu = gamma_of(static_cast<double>(n), std::ldexp(1.0, -24));
  const double gpu = gamma_of(static_cast<double>(n), std::ldexp(1.0, -22));
  const double output = output_in_bf16 ? u * (1 + gpu) : 0;
  return ((output + gpu + cpu) * (1 + u) * (1 + u) + 4 * std::ldexp(1.0, -24)) / (1 - cpu);
}

struct bf16_backends {
  std::unique_ptr<backend> gpu = make_cuda_backend(0, math_precision::bf16, /*deterministic=*/true);
  std::unique_ptr<backend> cpu = make_cpu_backend(1, math_precision::bf16_emulated);
  std::unique_ptr<backend> fp32 = make_cpu_backend(1);  // magnitudes, and bf16's own effect
};

tensor absolute(const tensor& t) {
  if (!t.defined()) return t;
  tensor out = t.clone();
  for (int64_t i = 0; i < out.numel(); ++i) out.data()[i] = std::fabs(out.data()[i]);
  return out;
}

/// `result` (named, of `op` at `shape`) from the GPU within factor·magnitude of the CPU's, element
/// by element; the failure names the worst element, its error and its bound.
void check_within(const std::string& op, const char* result, const tensor& gpu_host, const tensor& cpu,
                  const tensor& magnitude, double factor) {
  REQUIRE(gpu_host.shape() == cpu.shape());
  REQUIRE(magnitude.shape() == cpu.shape());
  double worst = 0, worst_error = 0, worst_bound = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const double error = std::fabs(static_cast<double>(gpu_host.data()[i]) - cpu.data()[i]);
    const double bound = factor * magnitude.data()[i];
    const double ratio = error == 0 ? 0 : (bound > 0 ? error / bound : HUGE_VAL);
    if (ratio > worst) worst = ratio, worst_error = error, worst_bound = bound, worst_at = i;
  }
  const double norm_wise = relative_error({gpu_host}, {cpu});
  INFO(op << ", " << result << " (" << to_string(cpu.shape()) << "): largest |gpu − cpu| / bound = " << worst
          << " at element " << worst_at << " (|gpu − cpu| = " << worst_error << ", bound = " << worst_bound
          << " = " << factor << " · Σ|aᵢbᵢ|); norm-wise relative error " << norm_wise);
  CHECK(worst <= 1.0);
}

struct conv_case {
  shape_t x, w;
  conv2d_params p;
  const char* what;
};

shape_t output_shape(const conv_case& c) {
  return {c.x[0], c.w[0], (c.x[2] + 2 * c.p.padding - c.w[2]) / c.p.stride + 1,
          (c.x[3] + 2 * c.p.padding - c.w[3]) / c.p.stride + 1};
}

std::string describe(const char* op, const conv_case& c) {
  std::ostringstream out;
  out << op << " (" << c.what << "): x " << to_string(c.x) << " w " << to_string(c.w) << " stride "
      << c.p.stride << " padding " << c.p.padding;
  return out.str();
}

}  // namespace

TEST_CASE("cuda bf16 on tensor cores: every convolution within the derived bound of the CPU in bf16") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  bf16_backends be;
  const std::vector<conv_case> cases = {
      {{8, 64, 16, 16}, {64, 64, 3, 3}, {1, 1}, "RevNet-18 basic F"},
      {{8, 64, 16, 16}, {128, 64, 3, 3}, {2, 1}, "downsampling 3×3"},
      {{8, 64, 16, 16}, {128, 64, 1, 1}, {2, 0}, "projection 1×1"},
      {{4, 3, 32, 32}, {128, 3, 3, 3}, {1, 1}, "CIFAR stem, 3 channels"},
      {{2, 3, 32, 32}, {64, 3, 7, 7}, {2, 3}, "ImageNet stem"},
      {{4, 1, 28, 28}, {16, 1, 3, 3}, {1, 1}, "Fashion-MNIST stem, 1 channel"},
      {{3, 5, 7, 6}, {4, 5, 3, 2}, {2, 0}, "odd, non-square"}};
  std::mt19937 rng(31);
  for (const conv_case& c : cases) {
    const tensor x = random_host(c.x, rng), w = random_host(c.w, rng, 0.3f), b = random_host({c.w[0]}, rng);
    const tensor dy = random_host(output_shape(c), rng);
    const tensor dw0 = random_host(c.w, rng), db0 = random_host({c.w[0]}, rng);
    const int64_t taps = c.w[2] * c.w[3];
    backend& g = *be.gpu;
    {
      const std::string op = describe("conv2d_forward with bias", c);
      const tensor y = g.to_host(g.conv2d_forward(g.from_host(x), g.from_host(w), g.from_host(b), c.p));
      const tensor magnitude = be.fp32->conv2d_forward(absolute(x), absolute(w), absolute(b), c.p);
      check_within(op, "y", y, be.cpu->conv2d_forward(x, w, b, c.p), magnitude,
                   bound_factor(c.x[1] * taps, true));
    }
    {
      const std::string op = describe("conv2d_backward_data", c);
      const tensor dx = g.to_host(g.conv2d_backward_data(g.from_host(dy), g.from_host(w), c.x, c.p));
      const tensor magnitude = be.fp32->conv2d_backward_data(absolute(dy), absolute(w), c.x, c.p);
      check_within(op, "dx", dx, be.cpu->conv2d_backward_data(dy, w, c.x, c.p), magnitude,
                   bound_factor(c.w[0] * taps, true));
    }
    {
      const std::string op = describe("conv2d_backward_filter into non-zero dw and db", c);
      tensor dw = g.from_host(dw0), db = g.from_host(db0);
      g.conv2d_backward_filter(g.from_host(x), g.from_host(dy), c.p, dw, db);
      tensor dw_cpu = dw0.clone(), db_cpu = db0.clone();
      be.cpu->conv2d_backward_filter(x, dy, c.p, dw_cpu, db_cpu);
      tensor dw_magnitude = absolute(dw0), db_magnitude = absolute(db0);
      be.fp32->conv2d_backward_filter(absolute(x), absolute(dy), c.p, dw_magnitude, db_magnitude);
      const shape_t y = output_shape(c);
      const double factor = bound_factor(y[0] * y[2] * y[3], true);
      check_within(op, "dw", g.to_host(dw), dw_cpu, dw_magnitude, factor);
      check_within(op, "db", g.to_host(db), db_cpu, db_magnitude, factor);
    }
  }
}

TEST_CASE("cuda bf16 on tensor cores: every GEMM of linear within the derived bound of the CPU in bf16") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  bf16_backends be;
  struct linear_case {
    int64_t n, in, out;
    const char* what;
  };
  const std::vector<linear_case> cases = {
      {16, 512, 10, "RevNet-18 head"}, {32, 1024, 256, "wide"}, {5, 33, 7, "odd"}};
  std::mt19937 rng(32);
  backend& g = *be.gpu;
  for (const linear_case& c : cases) {
    const std::string shape = std::string(" (") + c.what + "): x (" + std::to_string(c.n) + ", " +
                              std::to_string(c.in) + ") w (" + std::to_string(c.out) + ", " +
                              std::to_string(c.in) + ")";
    const tensor x = random_host({c.n, c.in}, rng), w = random_host({c.out, c.in}, rng, 0.1f);
    const tensor b = random_host({c.out}, rng), dy = random_host({c.n, c.out}, rng);
    const tensor dw0 = random_host({c.out, c.in}, rng), db0 = random_host({c.out}, rng);
    const tensor y = g.to_host(g.linear_forward(g.from_host(x), g.from_host(w), g.from_host(b)));
    check_within("linear_forward with bias" + shape, "y", y, be.cpu->linear_forward(x, w, b),
                 be.fp32->linear_forward(absolute(x), absolute(w), absolute(b)), bound_factor(c.in, false));
    const tensor dx = g.to_host(g.linear_backward_data(g.from_host(dy), g.from_host(w)));
    check_within("linear_backward_data" + shape, "dx", dx, be.cpu->linear_backward_data(dy, w),
                 be.fp32->linear_backward_data(absolute(dy), absolute(w)), bound_factor(c.out, false));
    tensor dw = g.from_host(dw0), db = g.from_host(db0);
    g.linear_backward_weight(g.from_host(x), g.from_host(dy), dw, db);
    tensor dw_cpu = dw0.clone(), db_cpu = db0.clone();
    be.cpu->linear_backward_weight(x, dy, dw_cpu, db_cpu);
    tensor dw_magnitude = absolute(dw0), db_magnitude = absolute(db0);
    be.fp32->linear_backward_weight(absolute(x), absolute(dy), dw_magnitude, db_magnitude);
    check_within("linear_backward_weight into non-zero dw and db" + shape, "dw", g.to_host(dw), dw_cpu,
                 dw_magnitude, bound_factor(c.n, false));
    check_within("linear_backward_weight into non-zero dw and db" + shape, "db", g.to_host(db), db_cpu,
                 db_magnitude, bound_factor(c.n, false));
  }
}

TEST_CASE("cuda bf16 on tensor cores: one plan per shape, bf16 descriptors, bit-identical repeats") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  bf16_backends be;
  std::mt19937 rng(33);
  const shape_t x_shape{8, 64, 8, 8}, w_shape{64, 64, 3, 3};
  const conv2d_params p{1, 1};
  backend& g = *be.gpu;
  const tensor x = g.from_host(random_host(x_shape, rng)), w = g.from_host(random_host(w_shape, rng, 0.1f));
  const tensor dy = g.from_host(random_host(x_shape, rng));
  std::vector<tensor> y, dx, dw;
  for (int run = 0; run < 2; ++run) {
    y.push_back(g.to_host(g.conv2d_forward(x, w, {}, p)));
    dx.push_back(g.to_host(g.conv2d_backward_data(dy, w, x_shape, p)));
    tensor grad = g.zeros(w_shape), no_bias;
    g.conv2d_backward_filter(x, dy, p, grad, no_bias);
    dw.push_back(g.to_host(grad));
  }
  CHECK(dynamic_cast<cuda_backend&>(g).conv_plans() == 1);
  CHECK(bit_equal(y[0], y[1]));
  CHECK(bit_equal(dx[0], dx[1]));
  CHECK(bit_equal(dw[0], dw[1]));
  CHECK(g.name().find("bf16 on tensor cores") != std::string::npos);
}

namespace {

struct step_result {
  float loss = 0;
  std::vector<tensor> grads;  // every parameter's, on the host
};

/// One forward, loss and backward of a freshly built `arch` (seed 5) on `be`.
step_result one_step(const std::string& arch, backend& be, const activation& x,
                     const std::vector<int32_t>& labels) {
  auto blocks = build_revnet(revnet_preset(arch), be, 5);
  std::vector<tape> tapes(blocks.size());
  activation h{be.from_host(x.x1), x.x2.defined() ? be.from_host(x.x2) : tensor{}};
  for (std::size_t i = 0; i < blocks.size(); ++i) h = blocks[i]->forward(h, pass::train, &tapes[i]);
  tensor dlogits;
  step_result out;
  out.loss = be.softmax_cross_entropy(h.x1, labels, &dlogits, nullptr);
  activation d{dlogits, {}};
  for (std::size_t i = blocks.size(); i-- > 0;) d = blocks[i]->backward(tapes[i], d);
  for (auto& b : blocks)
    for (parameter* p : b->parameters()) out.grads.push_back(be.to_host(p->grad));
  return out;
}

}  // namespace

// No elementwise bound survives a whole network (ReLU kinks, batch statistics), so the bound is
// measured: the CPU's bf16 moves the gradients by d from fp32 by rounding both operands of every
// product (≤ 2u relative each); the GPU's one extra rounding of a convolution's output (≤ u, and
// none where the next convolution rounds that value again) is at most half that perturbation, so
// it moves them by about d/2 from the CPU's bf16: held to 2d, four times that. The loss: within
// 2·|its own bf16 − fp32 change| or one bf16 rounding of itself, whichever is larger.
TEST_CASE(
    "cuda bf16 on tensor cores: whole RevNets (tiny, fashion_small), one step, against the CPU in bf16") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  bf16_backends be;
  std::mt19937 rng(34);
  for (const std::string arch : {"tiny", "fashion_small"}) {
    const revnet_spec spec = revnet_preset(arch);
    const int64_t batch = 16;
    const activation_shape s = input_shape(spec, batch);
    const activation x{random_host(s.x1, rng), s.x2.empty() ? tensor{} : random_host(s.x2, rng)};
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<int32_t>(rng() % spec.num_classes));
    const step_result fp32 = one_step(arch, *be.fp32, x, labels);
    const step_result cpu = one_step(arch, *be.cpu, x, labels);
    const step_result gpu = one_step(arch, *be.gpu, x, labels);
    const double bf16_effect = relative_error(cpu.grads, fp32.grads);
    const double gap = relative_error(gpu.grads, cpu.grads);
    const double loss_bound =
        std::max(2.0 * std::fabs(double{cpu.loss} - fp32.loss), u * std::fabs(double{cpu.loss}));
    INFO(arch << ": gradients GPU bf16 vs CPU bf16 " << gap << " (bound " << 2 * bf16_effect
              << " = 2 × CPU bf16 vs fp32 " << bf16_effect << "); loss GPU " << gpu.loss << ", CPU bf16 "
              << cpu.loss << ", fp32 " << fp32.loss << " (bound " << loss_bound << ")");
    MESSAGE(arch << ": gradients' relative error against the CPU's bf16 " << gap
                 << ", bf16's own effect on the CPU " << bf16_effect);
    CHECK(bf16_effect > 0);  // the CPU's bf16 did round
    CHECK(gap <= 2 * bf16_effect);
    CHECK(std::fabs(gpu.loss - cpu.loss) <= loss_bound);
  }
}
