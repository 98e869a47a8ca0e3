// GPU against CPU for convolution and batch norm, forward and backward, fp32 and TF32;
// parameter gradients must accumulate (+=) on the GPU as on the CPU.
#include <doctest/doctest.h>

#include "compute/cuda/cuda_backend_impl.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

struct conv_case {
  shape_t x, w;
  conv2d_params p;
  bool bias;
};

const std::vector<conv_case> conv_cases = {
    {{4, 3, 8, 8}, {6, 3, 3, 3}, {1, 1}, true},    // CIFAR stem-like
    {{2, 3, 16, 16}, {4, 3, 7, 7}, {2, 3}, true},  // ImageNet stem-like
    {{4, 8, 8, 8}, {8, 8, 3, 3}, {1, 1}, false},   // basic F
    {{4, 8, 8, 8}, {16, 8, 3, 3}, {2, 1}, true},   // downsampling
    {{4, 8, 8, 8}, {16, 8, 1, 1}, {2, 0}, true},   // projection
    {{3, 5, 7, 6}, {4, 5, 3, 2}, {2, 0}, true}};   // odd, non-square

}  // namespace

TEST_CASE("conv2d forward, backward data and backward filter match the CPU (fp32, accumulating)") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(1);
  for (const conv_case& c : conv_cases) {
    const tensor x = random_host(c.x, rng), w = random_host(c.w, rng, 0.3f);
    const tensor b = c.bias ? random_host({c.w[0]}, rng) : tensor{};
    const tensor xg = be.gpu->from_host(x), wg = be.gpu->from_host(w);
    const tensor bg = c.bias ? be.gpu->from_host(b) : tensor{};
    INFO("x " << to_string(c.x) << " w " << to_string(c.w) << " stride " << c.p.stride << " pad "
              << c.p.padding);

    const tensor y = be.cpu->conv2d_forward(x, w, b, c.p);
    CHECK(gpu_vs_cpu(*be.gpu, be.gpu->conv2d_forward(xg, wg, bg, c.p), y) < op_tolerance);

    const tensor dy = random_host(y.shape(), rng);
    const tensor dyg = be.gpu->from_host(dy);
    CHECK(gpu_vs_cpu(*be.gpu, be.gpu->conv2d_backward_data(dyg, wg, c.x, c.p),
                     be.cpu->conv2d_backward_data(dy, w, c.x, c.p)) < op_tolerance);

    // Start from non-zero gradients: both backends must add to them.
    tensor dw = random_host(c.w, rng), db = c.bias ? random_host({c.w[0]}, rng) : tensor{};
    tensor dwg = be.gpu->from_host(dw), dbg = c.bias ? be.gpu->from_host(db) : tensor{};
    for (int pass = 0; pass < 2; ++pass) {
      be.cpu->conv2d_backward_filter(x, dy, c.p, dw, db);
      be.gpu->conv2d_backward_filter(xg, dyg, c.p, dwg, dbg);
    }
    CHECK(gpu_vs_cpu(*be.gpu, dwg, dw) < op_tolerance);
    if (c.bias) CHECK(gpu_vs_cpu(*be.gpu, dbg, db) < op_tolerance);
  }
}

TEST_CASE("conv2d with TF32 stays within the documented TF32 tolerance") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be(/*tf32=*/true);
  std::mt19937 rng(2);
  for (const conv_case& c : conv_cases) {
    const tensor x = random_host(c.x, rng), w = random_host(c.w, rng, 0.3f), b = random_host({c.w[0]}, rng);
    const tensor y = be.cpu->conv2d_forward(x, w, b, c.p);
    const tensor yg =
        be.gpu->conv2d_forward(be.gpu->from_host(x), be.gpu->from_host(w), be.gpu->from_host(b), c.p);
    const double error = gpu_vs_cpu(*be.gpu, yg, y);
    INFO("x " << to_string(c.x) << " w " << to_string(c.w) << ": relative error " << error);
    CHECK(error < tf32_tolerance);
  }
}

TEST_CASE("deterministic backend: one plan per shape, and repeated backward passes are bit-identical") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(3);
  const conv_case& c = conv_cases[3];
  const tensor xg = be.gpu->from_host(random_host(c.x, rng)), wg = be.gpu->from_host(random_host(c.w, rng));
  const tensor yg = be.gpu->conv2d_forward(xg, wg, {}, c.p);
  auto& gpu = dynamic_cast<cuda_backend&>(*be.gpu);
  CHECK(gpu.conv_plans() == 1);
  be.gpu->conv2d_forward(xg, wg, {}, c.p);
  CHECK(gpu.conv_plans() == 1);  // descriptors and algorithms chosen once per shape
  const tensor dyg = be.gpu->from_host(random_host(yg.shape(), rng));
  std::vector<tensor> dx, dw;
  for (int run = 0; run < 2; ++run) {
    dx.push_back(be.gpu->to_host(be.gpu->conv2d_backward_data(dyg, wg, c.x, c.p)));
    tensor g = be.gpu->zeros(c.w);
    tensor no_bias;
    be.gpu->conv2d_backward_filter(xg, dyg, c.p, g, no_bias);
    dw.push_back(be.gpu->to_host(g));
  }
  CHECK(bit_equal(dx[0], dx[1]));
  CHECK(bit_equal(dw[0], dw[1]));
}

TEST_CASE("batch norm: training forward, saved statistics, running update, eval, backward match the CPU") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(4);
  const float eps = 1e-5f, momentum = 0.1f;
  for (const shape_t& shape : {shape_t{8, 6, 5, 5}, shape_t{16, 4, 1, 1}, shape_t{2, 3, 9, 7}}) {
    INFO("x " << to_string(shape));
    const int64_t c = shape[1];
    tensor x = random_host(shape, rng, 2.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 3.f;  // a mean far from 0
    const tensor gamma = random_host({c}, rng), beta = random_host({c}, rng);
    const tensor xg = be.gpu->from_host(x), gammag = be.gpu->from_host(gamma),
                 betag = be.gpu->from_host(beta);

    batch_norm_saved saved, savedg;
    const tensor y = be.cpu->batch_norm_forward_train(x, gamma, beta, eps, saved);
    const tensor yg = be.gpu->batch_norm_forward_train(xg, gammag, betag, eps, savedg);
    CHECK(gpu_vs_cpu(*be.gpu, yg, y) < op_tolerance);
    CHECK(gpu_vs_cpu(*be.gpu, savedg.mean, saved.mean) < op_tolerance);
    CHECK(gpu_vs_cpu(*be.gpu, savedg.inv_std, saved.inv_std) < op_tolerance);  // 1/sqrt(σ² + eps), not 1/σ²

    // Running statistics: PyTorch's unbiased variance and momentum, twice from a non-trivial start.
    tensor running_mean = random_host({c}, rng), running_var = random_host({c}, rng);
    for (int64_t i = 0; i < c; ++i) running_var.data()[i] = 1.f + std::abs(running_var.data()[i]);
    tensor running_meang = be.gpu->from_host(running_mean), running_varg = be.gpu->from_host(running_var);
    const int64_t count = shape[0] * shape[2] * shape[3];
    for (int step = 0; step < 2; ++step) {
      be.cpu->batch_norm_update_running(saved, count, eps, momentum, running_mean, running_var);
      be.gpu->batch_norm_update_running(savedg, count, eps, momentum, running_meang, running_varg);
    }
    CHECK(gpu_vs_cpu(*be.gpu, running_meang, running_mean) < op_tolerance);
    CHECK(gpu_vs_cpu(*be.gpu, running_varg, running_var) < op_tolerance);

    CHECK(gpu_vs_cpu(*be.gpu,
                     be.gpu->batch_norm_forward_eval(xg, gammag, betag, running_meang, running_varg, eps),
                     be.cpu->batch_norm_forward_eval(x, gamma, beta, running_mean, running_var, eps)) <
          op_tolerance);

    const tensor dy = random_host(shape, rng);
    const tensor dyg = be.gpu->from_host(dy);
    tensor dgamma = random_host({c}, rng), dbeta = random_host({c}, rng);
    tensor dgammag = be.gpu->from_host(dgamma), dbetag = be.gpu->from_host(dbeta);
    tensor dx, dxg;
    for (int pass = 0; pass < 2; ++pass) {
      dx = be.cpu->batch_norm_backward(x, gamma, saved, dy, dgamma, dbeta);
      dxg = be.gpu->batch_norm_backward(xg, gammag, savedg, dyg, dgammag, dbetag);
    }
    CHECK(gpu_vs_cpu(*be.gpu, dxg, dx) < op_tolerance);
    CHECK(gpu_vs_cpu(*be.gpu, dgammag, dgamma) < op_tolerance);
    CHECK(gpu_vs_cpu(*be.gpu, dbetag, dbeta) < op_tolerance);
  }
}

TEST_CASE("GPU ops reject host tensors and bad shapes with the CPU twin's messages") {
  std::string why;
  if (!petra::cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  const tensor host = tensor::zeros({2, 3, 4, 4});
  CHECK_THROWS_WITH_AS(be.gpu->relu_forward(host), doctest::Contains("lives on cpu"), std::invalid_argument);
  const tensor x = be.gpu->zeros({2, 3, 4, 4}), w = be.gpu->zeros({5, 4, 3, 3});
  CHECK_THROWS_WITH_AS(be.gpu->conv2d_forward(x, w, {}, {1, 1}), doctest::Contains("has 3 channels but w"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(be.gpu->split_channels(be.gpu->zeros({2, 3, 4, 4})), doctest::Contains("even number"),
                       std::invalid_argument);
}
