// The table's token cases (what a transformer needs): layer norm with its backward accumulating
// into non-zero parameter gradients and its tangent, GELU, softmax over the last axis, the batched
// matmul in its four transpose choices with its backward, the token mean, linear over tokens
// by a reshape of (N, T, C) to (N·T, C), the scale and transpose12. Batches and token counts are odd where
// they can be.
#include <array>

#include "tests/backends/op_table.hpp"
#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

namespace {

std::vector<op_case> layer_norm_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  const float eps = 1e-5f;
  for (const shape_t& shape : {shape_t{3, 5, 7}, shape_t{2, 17, 48}, shape_t{4, 1, 3}, shape_t{1, 2, 1}}) {
    const int64_t c = shape[2];
    tensor x = random_host(shape, rng, 2.f);
    for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] += 3.f;  // a mean far from 0
    cases.push_back({"layer_norm_forward, backward twice, jvp: x " + to_string(shape),
                     {x, random_host({c}, rng), random_host({c}, rng), random_host(shape, rng),
                      random_host({c}, rng), random_host({c}, rng), random_host(shape, rng)},
                     [eps](backend& be, std::vector<tensor>& in) {
                       layer_norm_saved saved;
                       const tensor y = be.layer_norm_forward(in[0], in[1], in[2], eps, saved);
                       tensor dx;
                       for (int pass = 0; pass < 2; ++pass)
                         dx = be.layer_norm_backward(in[0], in[1], saved, in[3], in[4], in[5]);
                       const tensor y_dot = be.layer_norm_jvp(in[0], in[1], saved, in[6]);
                       return op_result{{y, saved.mean, saved.inv_std, dx, in[4], in[5], y_dot}};
                     },
                     {parity::rounding}});
  }
  return cases;
}

std::vector<op_case> pointwise_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  // (B, h, T, T) attention scores among them: softmax over the last axis of any rank.
  for (const shape_t& shape : {shape_t{3, 5, 7}, shape_t{2, 3, 9, 9}, shape_t{5, 1}, shape_t{4, 1000}}) {
    cases.push_back({"gelu_forward, gelu_backward, softmax_forward, softmax_backward: " + to_string(shape),
                     {random_host(shape, rng, 3.f), random_host(shape, rng)},
                     [](backend& be, std::vector<tensor>& in) {
                       const tensor y = be.softmax_forward(in[0]);
                       return op_result{{be.gelu_forward(in[0]), be.gelu_backward(in[0], in[1]), y,
                                         be.softmax_backward(y, in[1])}};
                     },
                     {parity::rounding}});
  }
  return cases;
}

shape_t operand_shape(int64_t batch, int64_t rows, int64_t cols, bool transposed) {
  return transposed ? shape_t{batch, cols, rows} : shape_t{batch, rows, cols};
}

std::vector<op_case> batched_matmul_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  // (B, M, K, N): odd extents, and attention's Q·Kᵀ shape (B·h = 6, T = 17, d = 16).
  for (const auto& [batch, m, k, n] :
       std::vector<std::array<int64_t, 4>>{{3, 5, 7, 4}, {6, 17, 16, 17}, {1, 1, 1, 1}, {2, 3, 64, 2}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        cases.push_back({"batched_matmul and its backward: B " + std::to_string(batch) + " M " +
                             std::to_string(m) + " K " + std::to_string(k) + " N " + std::to_string(n) +
                             (ta ? ", a transposed" : "") + (tb ? ", b transposed" : ""),
                         {random_host(operand_shape(batch, m, k, ta), rng),
                          random_host(operand_shape(batch, k, n, tb), rng), random_host({batch, m, n}, rng)},
                         [ta, tb](backend& be, std::vector<tensor>& in) {
                           const tensor c = be.batched_matmul(in[0], in[1], ta, tb);
                           auto [da, db] = be.batched_matmul_backward(in[0], in[1], in[2], ta, tb);
                           return op_result{{c, da, db}};
                         },
                         {parity::tf32},
                         {bf16_rule::products}});
      }
  return cases;
}

std::vector<op_case> token_mean_and_linear_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  for (const shape_t& shape : {shape_t{3, 5, 7}, shape_t{2, 49, 16}, shape_t{1, 1, 4}}) {
    cases.push_back({"token_mean_forward and backward: " + to_string(shape),
                     {random_host(shape, rng), random_host({shape[0], shape[2]}, rng)},
                     [shape](backend& be, std::vector<tensor>& in) {
                       return op_result{{be.token_mean_forward(in[0]), be.token_mean_backward(in[1], shape)}};
                     },
                     {parity::rounding}});
    // Linear over tokens is linear over N·T rows: the existing op on a reshaped view, every backend.
    const int64_t rows = shape[0] * shape[1], in_features = shape[2], out = 6;
    cases.push_back(
        {"linear over tokens by reshape to (N·T, C): " + to_string(shape),
         {random_host(shape, rng), random_host({out, in_features}, rng), random_host({out}, rng),
          random_host({shape[0], shape[1], out}, rng), random_host({out, in_features}, rng),
          random_host({out}, rng)},
         [rows, in_features, out, shape](backend& be, std::vector<tensor>& in) {
           const tensor x = in[0].reshaped({rows, in_features}), dy = in[3].reshaped({rows, out});
           const tensor y = be.linear_forward(x, in[1], in[2]).reshaped({shape[0], shape[1], out});
           const tensor dx = be.linear_backward_data(dy, in[1]).reshaped(shape);
           be.linear_backward_weight(x, dy, in[4], in[5]);
           return op_result{{y, dx, in[4], in[5]}};
         },
         {parity::tf32, parity::tf32, parity::tf32, parity::rounding},
         {bf16_rule::products, bf16_rule::products, bf16_rule::products, bf16_rule::same}});
  }
  return cases;
}

std::vector<op_case> scale_and_transpose_cases(std::mt19937& rng) {
  std::vector<op_case> cases;
  for (const auto& [shape, alpha] : std::vector<std::pair<shape_t, float>>{
           {{3, 5, 7}, 0.125f}, {{2, 3, 9, 9}, -1.7f}, {{1}, 0.f}, {{4, 1000}, 3.f}})
    cases.push_back({"scale by " + std::to_string(alpha) + ": " + to_string(shape),
                     {random_host(shape, rng)},
                     [alpha = alpha](backend& be, std::vector<tensor>& in) {
                       return op_result{{be.scale(in[0], alpha)}};
                     },
                     {parity::exact}});
  // Attention's (N, T, h, d) heads, a feature map (N, C, H·W, 1), degenerate extents.
  for (const shape_t& shape :
       {shape_t{3, 17, 4, 8}, shape_t{2, 16, 49, 1}, shape_t{1, 1, 5, 3}, shape_t{2, 3, 1, 1}})
    cases.push_back({"transpose12 and back: " + to_string(shape),
                     {random_host(shape, rng)},
                     [](backend& be, std::vector<tensor>& in) {
                       const tensor y = be.transpose12(in[0]);
                       return op_result{{y, be.transpose12(y)}};
                     },
                     {parity::exact}});
  return cases;
}

}  // namespace

std::vector<op_case> token_cases() {
  std::mt19937 rng(6);
  std::vector<op_case> cases = layer_norm_cases(rng);
  for (auto family :
       {pointwise_cases, batched_matmul_cases, token_mean_and_linear_cases, scale_and_transpose_cases})
    for (op_case& c : family(rng)) cases.push_back(std::move(c));
  return cases;
}

}  // namespace petra::testing
