// The token ops at a ViT-S attention's size (2 samples, 197 tokens, 384 features, 6 heads of 64) on
// cuda:0 against the CPU, beyond the op table's small shapes: rows longer than a warp, a 197-wide
// softmax, strided batched GEMMs of 12 items; and the same bits when run twice (deterministic).
#include <doctest/doctest.h>

#include <random>

#include "compute/forward/op_jvps.hpp"
#include "tests/cuda/parity.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

/// Every result of one attention-shaped pass on `be` (inputs from the host), brought to the host.
std::vector<tensor> attention_pass(backend& be, const std::vector<tensor>& host) {
  std::vector<tensor> in;
  for (const tensor& t : host) in.push_back(be.from_host(t));
  // in: x (2, 197, 384), γ, β (384), q, k, v (12, 197, 64), dy (2, 197, 384), d_attention (12, 197, 64)
  layer_norm_saved saved;
  const tensor y = be.layer_norm_forward(in[0], in[1], in[2], 1e-6f, saved);
  tensor dgamma = be.zeros({384}), dbeta = be.zeros({384});
  const tensor dx = be.layer_norm_backward(in[0], in[1], saved, in[6], dgamma, dbeta);
  const tensor y_dot = layer_norm_tangent(be, in[0], in[6], in[1], in[1], in[2], saved, 1e-6f);
  const tensor scores = be.batched_matmul(in[3], in[4], false, true);  // (12, 197, 197)
  const tensor weights = be.softmax_forward(scores);
  const tensor out = be.batched_matmul(weights, in[5], false, false);  // (12, 197, 64)
  auto [d_weights, dv] = be.batched_matmul_backward(weights, in[5], in[7], false, false);
  const tensor d_scores = be.softmax_backward(weights, d_weights);
  auto [dq, dk] = be.batched_matmul_backward(in[3], in[4], d_scores, false, true);
  const tensor hidden = be.gelu_forward(y), d_hidden = be.gelu_backward(y, in[6]);
  const tensor pooled = be.token_mean_forward(hidden), d_pooled = be.token_mean_backward(pooled, y.shape());
  std::vector<tensor> results{y,      saved.mean, saved.inv_std, dx,        dgamma,  dbeta,    y_dot,
                              scores, weights,    out,           d_weights, dv,      d_scores, dq,
                              dk,     hidden,     d_hidden,      pooled,    d_pooled};
  for (tensor& t : results) t = be.to_host(t);
  return results;
}

}  // namespace

TEST_CASE("cuda:0 token ops at ViT-S attention size: within fp32 round-off of the CPU, the same bits twice") {
  std::string why;
  if (!cuda_available(&why)) PETRA_SKIP("no usable GPU: " + why);
  cpu_and_gpu be;
  std::mt19937 rng(23);
  const std::vector<tensor> host = {random_host({2, 197, 384}, rng), random_host({384}, rng),
                                    random_host({384}, rng),         random_host({12, 197, 64}, rng),
                                    random_host({12, 197, 64}, rng), random_host({12, 197, 64}, rng),
                                    random_host({2, 197, 384}, rng), random_host({12, 197, 64}, rng)};
  const std::vector<tensor> cpu = attention_pass(*be.cpu, host), gpu = attention_pass(*be.gpu, host),
                            again = attention_pass(*be.gpu, host);
  REQUIRE(cpu.size() == gpu.size());
  for (std::size_t k = 0; k < cpu.size(); ++k) {
    CAPTURE(k);
    const double error = relative_error({gpu[k]}, {cpu[k]});
    INFO("relative error " << error);
    CHECK(error < op_tolerance);
    CHECK(bit_equal(gpu[k], again[k]));
  }
}
