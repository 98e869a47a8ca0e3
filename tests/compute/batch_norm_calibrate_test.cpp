// pass::calibrate (training.bn_recalibration): a run of calibrate passes leaves a batch norm's
// running statistics the mean of its inputs' batch statistics, whatever they were before; the output
// is the recompute pass's; any other pass starts the next run afresh.
#include <doctest/doctest.h>

#include <cmath>

#include "compute/layers/batch_norm.hpp"
#include "tests/compute/gradcheck.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// Per channel of x (N, C, H, W): the mean and the unbiased variance, in double.
std::pair<std::vector<double>, std::vector<double>> batch_statistics(const tensor& x) {
  const int64_t n = x.dim(0), c = x.dim(1), plane = x.dim(2) * x.dim(3);
  std::vector<double> mean(c, 0), var(c, 0);
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < plane; ++p) mean[k] += x.data()[(i * c + k) * plane + p];
    mean[k] /= static_cast<double>(n * plane);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < plane; ++p) var[k] += std::pow(x.data()[(i * c + k) * plane + p] - mean[k], 2);
    var[k] /= static_cast<double>(n * plane - 1);
  }
  return {mean, var};
}

std::vector<float> buffer(batch_norm_layer& bn, const std::string& name) {
  std::vector<buffer_ref> out;
  bn.collect_buffers(out);
  for (const buffer_ref& b : out)
    if (b.name == "bn." + name) return b.value->to_vector();
  FAIL("no buffer " << name);
  return {};
}

/// x with every channel shifted and scaled differently, so the batches' statistics differ.
tensor input(std::mt19937& rng, float shift, float scale) {
  tensor x = random_tensor({4, 3, 5, 5}, rng, scale);
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += shift;
  return x;
}

}  // namespace

TEST_CASE("calibrate passes leave the running statistics the mean of their batch statistics") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(7);
  batch_norm_layer bn(*be, "bn", 3);
  const tensor a = input(rng, 5.f, 3.f), b = input(rng, -1.f, 0.5f), c = input(rng, 2.f, 2.f);
  bn.forward(a, pass::train, nullptr);  // running statistics other than the initial ones

  const tensor y = bn.forward(b, pass::calibrate, nullptr);
  CHECK(y.to_vector() == bn.forward(b, pass::recompute, nullptr).to_vector());  // batch statistics
  bn.forward(b, pass::calibrate, nullptr);  // (the recompute pass started the run afresh)
  bn.forward(c, pass::calibrate, nullptr);
  const auto [mean_b, var_b] = batch_statistics(b);
  const auto [mean_c, var_c] = batch_statistics(c);
  const std::vector<float> mean = buffer(bn, "running_mean"), var = buffer(bn, "running_var");
  for (int k = 0; k < 3; ++k) {
    CHECK(mean[k] == doctest::Approx((mean_b[k] + mean_c[k]) / 2).epsilon(1e-5));
    CHECK(var[k] == doctest::Approx((var_b[k] + var_c[k]) / 2).epsilon(1e-5));
  }

  // A training pass between two runs: the next run starts from nothing the earlier one left.
  bn.forward(a, pass::train, nullptr);
  bn.forward(c, pass::calibrate, nullptr);
  const std::vector<float> mean_after = buffer(bn, "running_mean"), var_after = buffer(bn, "running_var");
  for (int k = 0; k < 3; ++k) {
    CHECK(mean_after[k] == doctest::Approx(mean_c[k]).epsilon(1e-5));
    CHECK(var_after[k] == doctest::Approx(var_c[k]).epsilon(1e-5));
  }
}
