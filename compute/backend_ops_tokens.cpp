// The backend's public token ops (layer norm, GELU, softmax, batched matmul, token mean, scale,
// transpose12: what a transformer needs): each checks its arguments once, for every backend, and calls its
// *_impl.
#include <cmath>
#include <string>

#include "compute/op_checks.hpp"

namespace petra {

namespace {

/// At least one feature per token: a norm or softmax over an empty axis has nothing to average.
void require_features(const char* op, const char* name, const tensor& t) {
  if (t.dim(t.rank() - 1) < 1)
    fail_op(op, std::string(name) + " " + t.shape_str() + " has no features on its last axis: need C ≥ 1");
}

std::string str(int64_t v) { return std::to_string(v); }

/// The (rows, inner) of op(t) for a (B, R, C) operand: (R, C), or (C, R) when transposed.
std::pair<int64_t, int64_t> operand_extents(const tensor& t, bool transposed) {
  return transposed ? std::make_pair(t.dim(2), t.dim(1)) : std::make_pair(t.dim(1), t.dim(2));
}

}  // namespace

// --- layer norm -------------------------------------------------------------------------------

tensor backend::layer_norm_forward(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                   layer_norm_saved& saved) {
  const char* op = "layer_norm_forward";
  require(op, "x", x, 3, "(N, T, C)");
  require_features(op, "x", x);
  require_vector(op, "gamma", gamma, x.dim(2), "x's features (C)");
  require_vector(op, "beta", beta, x.dim(2), "x's features (C)");
  if (!(eps >= 0.f)) fail_op(op, "eps = " + std::to_string(eps) + " must be ≥ 0");
  return layer_norm_forward_impl(x, gamma, beta, eps, saved);
}

namespace {

/// saved.mean and saved.inv_std are the (N, T) statistics of x (N, T, C).
void require_layer_norm_saved(const char* op, const tensor& x, const layer_norm_saved& saved) {
  for (const tensor* s : {&saved.mean, &saved.inv_std})
    if (!s->defined() || s->shape() != shape_t{x.dim(0), x.dim(1)})
      fail_op(op, std::string(s == &saved.mean ? "saved.mean " : "saved.inv_std ") +
                      (s->defined() ? s->shape_str() : "(undefined)") +
                      " must be (N, T) = " + to_string({x.dim(0), x.dim(1)}) + " for x " + x.shape_str() +
                      ": pass what layer_norm_forward filled in for this x");
}

}  // namespace

tensor backend::layer_norm_backward(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                    const tensor& dy, tensor& dgamma, tensor& dbeta) {
  const char* op = "layer_norm_backward";
  require(op, "x", x, 3, "(N, T, C)");
  require_features(op, "x", x);
  require_layer_norm_saved(op, x, saved);
  require(op, "saved.mean", saved.mean);
  require(op, "saved.inv_std", saved.inv_std);
  require_vector(op, "gamma", gamma, x.dim(2), "x's features (C)");
  require(op, "dy", dy, 3, "(N, T, C)");
  require_same_shape(op, "dy", dy, "x", x);
  require_vector(op, "dgamma", dgamma, x.dim(2), "x's features (C)");
  require_vector(op, "dbeta", dbeta, x.dim(2), "x's features (C)");
  return layer_norm_backward_impl(x, gamma, saved, dy, dgamma, dbeta);
}

tensor backend::layer_norm_jvp(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                               const tensor& x_dot) {
  const char* op = "layer_norm_jvp";
  require(op, "x", x, 3, "(N, T, C)");
  require_features(op, "x", x);
  require_layer_norm_saved(op, x, saved);
  require(op, "saved.mean", saved.mean);
  require(op, "saved.inv_std", saved.inv_std);
  require_vector(op, "gamma", gamma, x.dim(2), "x's features (C)");
  require(op, "x_dot", x_dot, 3, "(N, T, C)");
  require_same_shape(op, "x_dot", x_dot, "x", x);
  return layer_norm_jvp_impl(x, gamma, saved, x_dot);
}

// --- GELU and softmax -------------------------------------------------------------------------

tensor backend::gelu_forward(const tensor& x) {
  require("gelu_forward", "x", x);
  return gelu_forward_impl(x);
}

tensor backend::gelu_backward(const tensor& x, const tensor& dy) {
  require("gelu_backward", "x", x);
  require("gelu_backward", "dy", dy);
  require_same_shape("gelu_backward", "dy", dy, "x", x);
  return gelu_backward_impl(x, dy);
}

tensor backend::softmax_forward(const tensor& x) {
  require("softmax_forward", "x", x);
  if (x.rank() < 1) fail_op("softmax_forward", "x is a scalar: softmax runs over a last axis");
  require_features("softmax_forward", "x", x);
  return softmax_forward_impl(x);
}

tensor backend::softmax_backward(const tensor& y, const tensor& dy) {
  require("softmax_backward", "y", y);
  if (y.rank() < 1) fail_op("softmax_backward", "y is a scalar: softmax runs over a last axis");
  require_features("softmax_backward", "y", y);
  require("softmax_backward", "dy", dy);
  require_same_shape("softmax_backward", "dy", dy, "y", y);
  return softmax_backward_impl(y, dy);
}

// --- batched matmul ---------------------------------------------------------------------------

namespace {

/// a and b agree on the batch and the inner extent K of op(a)·op(b).
void check_batched_operands(const char* op, const tensor& a, const tensor& b, bool transpose_a,
                            bool transpose_b) {
  if (a.dim(0) != b.dim(0))
    fail_op(op, "a " + a.shape_str() + " and b " + b.shape_str() + " have different batches (" +
                    str(a.dim(0)) + " and " + str(b.dim(0)) + "): item i of a multiplies item i of b");
  const int64_t k_a = operand_extents(a, transpose_a).second, k_b = operand_extents(b, transpose_b).first;
  if (k_a != k_b)
    fail_op(op, std::string("op(a) of a ") + a.shape_str() + (transpose_a ? " (transposed)" : "") +
                    " has inner extent " + str(k_a) + " but op(b) of b " + b.shape_str() +
                    (transpose_b ? " (transposed)" : "") + " has " + str(k_b) +
                    ": check which operand is transposed");
}

}  // namespace

tensor backend::batched_matmul(const tensor& a, const tensor& b, bool transpose_a, bool transpose_b) {
  const char* op = "batched_matmul";
  require(op, "a", a, 3, transpose_a ? "(B, K, M)" : "(B, M, K)");
  require(op, "b", b, 3, transpose_b ? "(B, N, K)" : "(B, K, N)");
  check_batched_operands(op, a, b, transpose_a, transpose_b);
  return batched_matmul_impl(a, b, transpose_a, transpose_b);
}

std::pair<tensor, tensor> backend::batched_matmul_backward(const tensor& a, const tensor& b, const tensor& dc,
                                                           bool transpose_a, bool transpose_b) {
  const char* op = "batched_matmul_backward";
  require(op, "a", a, 3, transpose_a ? "(B, K, M)" : "(B, M, K)");
  require(op, "b", b, 3, transpose_b ? "(B, N, K)" : "(B, K, N)");
  check_batched_operands(op, a, b, transpose_a, transpose_b);
  require(op, "dc", dc, 3, "(B, M, N)");
  const shape_t c_shape{a.dim(0), operand_extents(a, transpose_a).first,
                        operand_extents(b, transpose_b).second};
  if (dc.shape() != c_shape)
    fail_op(op, "dc " + dc.shape_str() + " is not the product's shape " + to_string(c_shape) + " for a " +
                    a.shape_str() + " and b " + b.shape_str());
  return batched_matmul_backward_impl(a, b, dc, transpose_a, transpose_b);
}

// --- token mean -------------------------------------------------------------------------------

tensor backend::token_mean_forward(const tensor& x) {
  require("token_mean_forward", "x", x, 3, "(N, T, C)");
  if (x.dim(1) < 1)
    fail_op("token_mean_forward", "x " + x.shape_str() + " has no tokens: nothing to average");
  return token_mean_forward_impl(x);
}

tensor backend::token_mean_backward(const tensor& dy, const shape_t& x_shape) {
  const char* op = "token_mean_backward";
  require(op, "dy", dy, 2, "(N, C)");
  if (x_shape.size() != 3 || dy.shape() != shape_t{x_shape[0], x_shape[2]})
    fail_op(op, "dy " + dy.shape_str() + " does not match x_shape " + to_string(x_shape) +
                    ": expected x (N, T, C) and dy (N, C)");
  if (x_shape[1] < 1) fail_op(op, "x_shape " + to_string(x_shape) + " has no tokens");
  return token_mean_backward_impl(dy, x_shape);
}

// --- scale and transpose12 ---------------------------------------------------------------------

tensor backend::scale(const tensor& x, float alpha) {
  require("scale", "x", x);
  if (!std::isfinite(alpha)) fail_op("scale", "alpha = " + std::to_string(alpha) + " must be finite");
  return scale_impl(x, alpha);
}

tensor backend::transpose12(const tensor& x) {
  require("transpose12", "x", x, 4, "(N, A, B, C)");
  return transpose12_impl(x);
}

}  // namespace petra
