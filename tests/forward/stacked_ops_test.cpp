// Stacked tangents, op by op: m tangents of one primal stacked along the batch give the m tangents
// computed one at a time. Bit for bit where the op does the same arithmetic per sample whatever the
// batch (pointwise ops, batch norm per group, pooling, the loss' dots); to 1e-6 of the largest value
// where one bigger GEMM may sum in another order (conv, linear).
#include <doctest/doctest.h>

#include "compute/forward/op_jvps.hpp"
#include "compute/forward/stacked.hpp"
#include "tests/compute/gradcheck.hpp"
#include "tests/forward/stacked_check.hpp"

using namespace petra;
using namespace petra::testing;

namespace {

std::vector<tensor> directions(const shape_t& shape, int64_t m, std::mt19937& rng) {
  std::vector<tensor> out;
  for (int64_t g = 0; g < m; ++g) out.push_back(random_direction(shape, rng));
  return out;
}

/// f on each tangent alone, and on all of them stacked, compared group by group.
void check_op(backend& be, const std::vector<tensor>& tangents, const std::function<tensor(const tensor&)>& f,
              match how) {
  std::vector<tensor> separate;
  for (const tensor& t : tangents) separate.push_back(f(t));
  check_groups(be, f(stack_batches(be, tangents)), separate, how);
}

}  // namespace

TEST_CASE("conv2d and linear: m stacked tangents (with or without parameter tangents) = m alone") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(61);
  for (int64_t m : {1, 3}) {
    CAPTURE(m);
    const tensor x = random_tensor({2, 3, 6, 6}, rng), w = random_tensor({4, 3, 3, 3}, rng, 0.3f);
    const tensor w_dot = random_direction(w.shape(), rng), b_dot = random_direction({4}, rng);
    for (conv2d_params p : {conv2d_params{1, 1}, conv2d_params{2, 0}}) {
      const std::vector<tensor> xs = directions(x.shape(), m, rng);
      check_op(
          *be, xs, [&](const tensor& t) { return conv2d_tangent(*be, x, t, w, {}, {}, p); }, match::close);
      check_op(
          *be, xs, [&](const tensor& t) { return conv2d_tangent(*be, x, t, w, w_dot, b_dot, p); },
          match::close);
    }
    const tensor a = random_tensor({5, 7}, rng), v = random_tensor({3, 7}, rng);
    const tensor v_dot = random_direction(v.shape(), rng), c_dot = random_direction({3}, rng);
    const std::vector<tensor> as = directions(a.shape(), m, rng);
    check_op(
        *be, as, [&](const tensor& t) { return linear_tangent(*be, a, t, v, {}, {}); }, match::close);
    check_op(
        *be, as, [&](const tensor& t) { return linear_tangent(*be, a, t, v, v_dot, c_dot); }, match::close);
  }
}

TEST_CASE(
    "batch norm, training (statistics' tangents per group) and eval: m stacked = m alone, bit for bit") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(62);
  for (int64_t m : {1, 3}) {
    CAPTURE(m);
    const tensor x = random_tensor({4, 3, 5, 5}, rng), gamma = random_tensor({3}, rng),
                 beta = random_tensor({3}, rng);
    const tensor gamma_dot = random_direction({3}, rng), beta_dot = random_direction({3}, rng);
    batch_norm_saved saved;
    be->batch_norm_forward_train(x, gamma, beta, 1e-5f, saved);
    const std::vector<tensor> xs = directions(x.shape(), m, rng);
    for (bool with_parameters : {false, true}) {
      CAPTURE(with_parameters);
      const tensor gd = with_parameters ? gamma_dot : tensor{}, bd = with_parameters ? beta_dot : tensor{};
      check_op(
          *be, xs,
          [&](const tensor& t) { return batch_norm_train_tangent(*be, x, t, gamma, gd, bd, saved, 1e-5f); },
          match::bits);
      const tensor mean = random_tensor({3}, rng), var = tensor::from_vector({3}, {1.f, 2.f, .5f});
      check_op(
          *be, xs,
          [&](const tensor& t) {
            return batch_norm_eval_tangent(*be, x, t, gamma, gd, bd, mean, var, 1e-5f);
          },
          match::bits);
    }
  }
}

TEST_CASE("ReLU, max pool, global average pool: m stacked = m alone, bit for bit") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(63);
  for (int64_t m : {1, 3}) {
    CAPTURE(m);
    const tensor x = random_tensor({2, 3, 4, 6}, rng);
    const tensor y = be->relu_forward(x);
    const std::vector<tensor> xs = directions(x.shape(), m, rng);
    check_op(
        *be, xs, [&](const tensor& t) { return relu_tangent(*be, y, t); }, match::bits);
    check_op(
        *be, xs, [&](const tensor& t) { return max_pool2x2_tangent(*be, x, t); }, match::bits);
    check_op(
        *be, xs, [&](const tensor& t) { return global_avg_pool_tangent(*be, t); }, match::bits);
  }
}

TEST_CASE("add, sub, split, concat (a zero half too): m stacked = m alone, bit for bit") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(64);
  for (int64_t m : {1, 3}) {
    CAPTURE(m);
    const shape_t half{2, 3, 4, 4}, whole{2, 6, 4, 4};
    const std::vector<tensor> as = directions(half, m, rng), bs = directions(half, m, rng);
    const std::vector<tensor> wholes = directions(whole, m, rng);
    const tensor a = stack_batches(*be, as), b = stack_batches(*be, bs);
    std::vector<tensor> sums, differences, negated, pairs, right_halves;
    for (std::size_t g = 0; g < as.size(); ++g) {
      sums.push_back(add_tangents(*be, as[g], bs[g]));
      differences.push_back(sub_tangents(*be, as[g], bs[g]));
      negated.push_back(sub_tangents(*be, tensor{}, bs[g]));
      pairs.push_back(concat_channels_tangent(*be, as[g], half, bs[g], half));
      right_halves.push_back(concat_channels_tangent(*be, tensor{}, half, bs[g], half));
    }
    check_groups(*be, add_tangents(*be, a, b), sums, match::bits);
    check_groups(*be, sub_tangents(*be, a, b), differences, match::bits);
    check_groups(*be, sub_tangents(*be, tensor{}, b), negated, match::bits);
    check_groups(*be, concat_channels_tangent(*be, a, half, b, half), pairs, match::bits);
    check_groups(*be, concat_channels_tangent(*be, tensor{}, half, b, half), right_halves, match::bits);
    check_op(
        *be, wholes, [&](const tensor& t) { return split_channels_tangent(*be, t).first; }, match::bits);
    check_op(
        *be, wholes, [&](const tensor& t) { return split_channels_tangent(*be, t).second; }, match::bits);
  }
}

TEST_CASE("the loss' per-sample derivatives of m stacked logits tangents = each alone, bit for bit") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(65);
  const tensor logits = random_tensor({4, 5}, rng);
  const std::vector<int32_t> labels{0, 3, 4, 1};
  for (int64_t m : {1, 3}) {
    CAPTURE(m);
    const std::vector<tensor> ts = directions(logits.shape(), m, rng);
    const loss_jvp stacked = softmax_cross_entropy_jvp(*be, logits, stack_batches(*be, ts), labels);
    REQUIRE(stacked.per_sample.size() == static_cast<std::size_t>(4 * m));
    for (int64_t g = 0; g < m; ++g) {
      const loss_jvp alone = softmax_cross_entropy_jvp(*be, logits, ts[static_cast<std::size_t>(g)], labels);
      CHECK(alone.loss == stacked.loss);
      for (int64_t i = 0; i < 4; ++i)
        CHECK(alone.per_sample[static_cast<std::size_t>(i)] ==
              stacked.per_sample[static_cast<std::size_t>(g * 4 + i)]);
    }
  }
}

TEST_CASE("a stacked tangent whose batch is not a multiple of the primal's is refused, naming the op") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(66);
  const tensor x = random_tensor({4, 3, 5, 5}, rng), y = be->relu_forward(x);
  CHECK_THROWS_WITH_AS(relu_tangent(*be, y, random_tensor({6, 3, 5, 5}, rng)),
                       doctest::Contains("relu_tangent: the tangent x_dot (6, 3, 5, 5) must stack m >= 1"),
                       std::invalid_argument);
}

TEST_CASE("layer norm, GELU, softmax, token mean, batched matmul: m stacked = m alone") {
  auto be = make_cpu_backend(1);
  std::mt19937 rng(66);
  for (int64_t m : {1, 3}) {
    CAPTURE(m);
    const tensor x = random_tensor({3, 5, 6}, rng), gamma = random_tensor({6}, rng),
                 beta = random_tensor({6}, rng);
    const tensor gamma_dot = random_direction({6}, rng), beta_dot = random_direction({6}, rng);
    layer_norm_saved saved;
    be->layer_norm_forward(x, gamma, beta, 1e-5f, saved);
    const std::vector<tensor> xs = directions(x.shape(), m, rng);
    for (bool with_parameters : {false, true}) {
      CAPTURE(with_parameters);
      const tensor gd = with_parameters ? gamma_dot : tensor{}, bd = with_parameters ? beta_dot : tensor{};
      check_op(
          *be, xs,
          [&](const tensor& t) { return layer_norm_tangent(*be, x, t, gamma, gd, bd, saved, 1e-5f); },
          match::bits);
    }
    const tensor y = be->softmax_forward(x);
    check_op(
        *be, xs, [&](const tensor& t) { return gelu_tangent(*be, x, t); }, match::bits);
    check_op(
        *be, xs, [&](const tensor& t) { return softmax_tangent(*be, y, t); }, match::bits);
    check_op(
        *be, xs, [&](const tensor& t) { return token_mean_tangent(*be, t); }, match::bits);
    // Q·Kᵀ with a tangent of Q, of K, or both (each its own stack of m).
    const tensor keys = random_tensor({3, 7, 6}, rng);
    const std::vector<tensor> key_dots = directions(keys.shape(), m, rng);
    check_op(
        *be, xs, [&](const tensor& t) { return batched_matmul_tangent(*be, x, t, keys, {}, false, true); },
        match::bits);
    check_op(
        *be, key_dots,
        [&](const tensor& t) { return batched_matmul_tangent(*be, x, {}, keys, t, false, true); },
        match::bits);
    std::vector<tensor> both;
    for (int64_t g = 0; g < m; ++g)
      both.push_back(batched_matmul_tangent(*be, x, xs[g], keys, key_dots[g], false, true));
    check_groups(*be,
                 batched_matmul_tangent(*be, x, stack_batches(*be, xs), keys, stack_batches(*be, key_dots),
                                        false, true),
                 both, match::bits);
  }
}
