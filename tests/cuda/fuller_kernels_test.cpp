// Fewer, fuller kernels: the multi-tensor SGD step gives the per-tensor kernel's bits, the bias
// gradient uses the whole GPU in a fixed order (the same bits every time, the double sum's value),
// and the deferred loss gives the synchronous loss's bits without the host waiting for it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "compute/cuda/channel_sums.hpp"
#include "compute/precision.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

bool same_float(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

/// db0[c] + Σ_{n,i} dy[n, c, i] summed in double on the host (each value rounded to bf16 first
/// when `bf16`), as a float: what a sum in double of any order rounds to, but at a float's ulp.
std::vector<float> channel_sums_on_host(const tensor& dy, const tensor& db0, bool bf16) {
  const int64_t n = dy.dim(0), k = dy.dim(1), area = dy.dim(2) * dy.dim(3);
  std::vector<float> out;
  for (int64_t c = 0; c < k; ++c) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < area; ++j) {
        const float v = dy.data()[(i * k + c) * area + j];
        sum += bf16 ? round_to_bf16(v) : v;
      }
    out.push_back(static_cast<float>(db0.data()[c] + sum));
  }
  return out;
}

}  // namespace

TEST_CASE("multi-tensor SGD step: the per-tensor kernels' bits for every tensor, chunk edges included") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  // Sizes around the 8192-element chunk: one element, less than a chunk, exactly one, one more,
  // several and a partial one (a 3×3 conv of 64 channels), a linear layer.
  const std::vector<shape_t> shapes = {{1}, {64}, {8192}, {8193}, {64, 64, 3, 3}, {10, 512}};
  const std::vector<sgd_update_params> settings = {
      {0.05f, 0.9f, 0.f, true, 0.5f}, {0.1f, 0.9f, 0.f, false, 1.f}, {0.2f, 0.f, 0.f, false, 0.25f}};
  std::mt19937 rng(17);
  for (const sgd_update_params& p : settings) {
    CAPTURE(p.momentum);
    CAPTURE(p.nesterov);
    std::vector<tensor> host_w, host_buffer;
    for (const shape_t& s : shapes) {
      host_w.push_back(random_host(s, rng));
      host_buffer.push_back(random_host(s, rng));
    }
    // Per tensor (sgd_update + fill_zero), all at once (sgd_step), and the CPU per tensor.
    struct side {
      std::vector<tensor> w, grad, buffer;
    };
    auto make_side = [&](backend& b) {
      side s;
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        s.w.push_back(b.from_host(host_w[i]));
        s.buffer.push_back(b.from_host(host_buffer[i]));
        s.grad.push_back(b.zeros(shapes[i]));
      }
      return s;
    };
    side single = make_side(*be.gpu), multi = make_side(*be.gpu), cpu = make_side(*be.cpu);
    auto decay = [](std::size_t i) { return i % 2 ? 0.f : 5e-4f * static_cast<float>(i + 1); };
    std::vector<sgd_target> targets;
    for (std::size_t i = 0; i < shapes.size(); ++i)
      targets.push_back({&multi.w[i], &multi.grad[i], &multi.buffer[i], decay(i)});
    for (int step = 0; step < 3; ++step) {
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        const tensor g = random_host(shapes[i], rng);
        be.gpu->copy(be.gpu->from_host(g), single.grad[i]);
        be.gpu->copy(be.gpu->from_host(g), multi.grad[i]);
        be.cpu->copy(g, cpu.grad[i]);
        sgd_update_params own = p;
        own.weight_decay = decay(i);
        be.gpu->sgd_update(single.w[i], single.grad[i], single.buffer[i], own);
        be.gpu->fill_zero(single.grad[i]);
        be.cpu->sgd_update(cpu.w[i], cpu.grad[i], cpu.buffer[i], own);
        be.cpu->fill_zero(cpu.grad[i]);
      }
      be.gpu->sgd_step(targets, p);
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        CAPTURE(step);
        CAPTURE(i);
        CHECK(bit_equal(be.gpu->to_host(multi.w[i]), be.gpu->to_host(single.w[i])));
        CHECK(bit_equal(be.gpu->to_host(multi.buffer[i]), be.gpu->to_host(single.buffer[i])));
        CHECK(bit_equal(be.gpu->to_host(multi.grad[i]), tensor::zeros(shapes[i])));
        CHECK(gpu_vs_cpu(*be.gpu, multi.w[i], cpu.w[i]) < op_tolerance);
      }
    }
  }
}

TEST_CASE("multi-tensor SGD step: a changed parameter list is uploaded again, an unchanged one reused") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(5);
  const sgd_update_params p{0.1f, 0.9f, 0.f, true, 1.f};
  tensor a = be.gpu->from_host(random_host({300}, rng)), b = be.gpu->from_host(random_host({20000}, rng));
  tensor ga = be.gpu->from_host(random_host({300}, rng)), gb = be.gpu->from_host(random_host({20000}, rng));
  tensor ma = be.gpu->zeros({300}), mb = be.gpu->zeros({20000});
  tensor a2 = be.gpu->from_host(be.gpu->to_host(a)), ga2 = be.gpu->from_host(be.gpu->to_host(ga)),
         ma2 = be.gpu->zeros({300});
  // Step a and b together, then a alone (another table), then both again: a's twin is stepped alone
  // by sgd_update each time.
  const std::vector<sgd_target> both = {{&a, &ga, &ma, 1e-3f}, {&b, &gb, &mb, 0.f}},
                                only_a = {{&a, &ga, &ma, 1e-3f}};
  for (const auto* targets : {&both, &only_a, &both}) {
    be.gpu->sgd_step(*targets, p);
    sgd_update_params own = p;
    own.weight_decay = 1e-3f;
    be.gpu->sgd_update(a2, ga2, ma2, own);
    be.gpu->fill_zero(ga2);
    CHECK(bit_equal(be.gpu->to_host(a), be.gpu->to_host(a2)));
    CHECK(bit_equal(be.gpu->to_host(ma), be.gpu->to_host(ma2)));
    // The next gradients: fresh values on both sides.
    const tensor g = random_host({300}, rng);
    be.gpu->copy(be.gpu->from_host(g), ga);
    be.gpu->copy(be.gpu->from_host(g), ga2);
  }
}

TEST_CASE("bias gradient over the whole GPU: the double sum's value, the same bits every time, bf16 too") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  struct bias_case {
    shape_t x, w;
    conv2d_params p;
  };
  // 32 slices per channel (RevNet-18's first planes at micro-batch 128), one slice of an odd count,
  // many channels over a small plane.
  const std::vector<bias_case> cases = {{{128, 64, 32, 32}, {64, 64, 3, 3}, {1, 1}},
                                        {{3, 5, 5, 7}, {9, 5, 3, 3}, {1, 1}},
                                        {{64, 256, 8, 8}, {512, 256, 3, 3}, {2, 1}}};
  std::mt19937 rng(23);
  for (math_precision precision : {math_precision::fp32, math_precision::bf16}) {
    auto gpu = make_cuda_backend(0, precision, /*deterministic=*/true);
    auto cpu = make_cpu_backend(1);
    for (const bias_case& c : cases) {
      CAPTURE(to_string(precision));
      CAPTURE(to_string(c.x));
      const tensor x = random_host(c.x, rng);
      const tensor y = cpu->conv2d_forward(x, random_host(c.w, rng), {}, c.p);
      const tensor dy = random_host(y.shape(), rng), db0 = random_host({c.w[0]}, rng);
      std::vector<tensor> runs;
      for (int run = 0; run < 2; ++run) {
        tensor dw = gpu->zeros(c.w), db = gpu->from_host(db0);
        gpu->conv2d_backward_filter(gpu->from_host(x), gpu->from_host(dy), c.p, dw, db);
        runs.push_back(gpu->to_host(db));
      }
      CHECK(bit_equal(runs[0], runs[1]));
      const std::vector<float> expected = channel_sums_on_host(dy, db0, precision == math_precision::bf16);
      for (int64_t k = 0; k < c.w[0]; ++k) {
        // Two double sums in different orders differ far below a float's ulp: one rounding apart
        // at most, where the exact sum lies on a float's rounding boundary.
        const float got = runs[0].data()[k], want = expected[static_cast<std::size_t>(k)];
        CHECK(std::fabs(got - want) <= std::nextafter(std::fabs(want), INFINITY) - std::fabs(want));
      }
      if (precision == math_precision::fp32) {
        tensor dw = cpu->zeros(c.w), db = db0.clone();
        cpu->conv2d_backward_filter(x, dy, c.p, dw, db);
        CHECK(relative_error({runs[0]}, {db}) < op_tolerance);
      }
    }
  }
}

TEST_CASE("deferred loss: the synchronous loss's bits, read in any order, or dropped unread") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(29);
  const tensor logits = random_host({128, 10}, rng, 4.f), other = random_host({7, 1000}, rng, 4.f);
  std::vector<int32_t> labels, other_labels;
  for (int i = 0; i < 128; ++i) labels.push_back(static_cast<int32_t>(rng() % 10));
  for (int i = 0; i < 7; ++i) other_labels.push_back(static_cast<int32_t>(rng() % 1000));
  const tensor on_gpu = be.gpu->from_host(logits), other_on_gpu = be.gpu->from_host(other);
  tensor sync_grad, deferred_grad;
  int64_t sync_correct = -1, deferred_correct = -1, other_correct = -1, cpu_correct = -1;
  const float sync = be.gpu->softmax_cross_entropy(on_gpu, labels, &sync_grad, &sync_correct);
  {
    // Queued and never read: its copy lands before its pinned block is reused.
    const deferred_loss dropped = be.gpu->softmax_cross_entropy_deferred(on_gpu, labels, nullptr);
  }
  const deferred_loss first = be.gpu->softmax_cross_entropy_deferred(on_gpu, labels, &deferred_grad);
  const deferred_loss second = be.gpu->softmax_cross_entropy_deferred(other_on_gpu, other_labels, nullptr);
  const float second_loss = second.get(&other_correct);  // the later one first
  const float deferred = first.get(&deferred_correct);
  CHECK(same_float(deferred, sync));
  CHECK(same_float(first.get(), sync));  // read twice: the same
  CHECK(deferred_correct == sync_correct);
  CHECK(bit_equal(be.gpu->to_host(deferred_grad), be.gpu->to_host(sync_grad)));
  CHECK(same_float(second_loss, be.gpu->softmax_cross_entropy(other_on_gpu, other_labels, nullptr, nullptr)));
  const float cpu_loss = be.cpu->softmax_cross_entropy(logits, labels, nullptr, &cpu_correct);
  CHECK(deferred == doctest::Approx(cpu_loss).epsilon(1e-6));
  CHECK(deferred_correct == cpu_correct);
  CHECK(other_correct >= 0);
}

TEST_CASE("bias gradient slices are a function of the shape only (no GPU needed)") {
  using cuda::kernels::channel_sum_slices;
  CHECK(channel_sum_slices(128, 32 * 32) == 32);  // 131072 values: 32 slices of 4096
  CHECK(channel_sum_slices(128, 16 * 16) == 8);
  CHECK(channel_sum_slices(128, 4 * 4) == 1);
  CHECK(channel_sum_slices(3, 35) == 1);
  CHECK(channel_sum_slices(1, 4097) == 2);
  CHECK(channel_sum_slices(1024, 224 * 224) == 256);  // capped
}
