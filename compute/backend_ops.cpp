// The backend's public ops (batch norm, pointwise, pooling, linear, channels, loss): each checks its
// arguments once, for every backend, and calls the backend's *_impl. The optimizers' ops are in
// backend_ops_optimizer.cpp.
#include <stdexcept>
#include <string>
#include <utility>

#include "compute/op_checks.hpp"

namespace petra {
namespace {

void require_even_plane(const char* op, const tensor& x) {
  if (x.dim(2) % 2 || x.dim(3) % 2)
    fail_op(op, "x " + x.shape_str() + " has an odd height or width: a 2×2 stride-2 pool needs both even");
}

/// At least one value per channel: N·H·W ≥ 1.
void require_values_per_channel(const char* op, const tensor& x) {
  if (x.dim(0) * x.dim(2) * x.dim(3) < 1)
    fail_op(op, "x " + x.shape_str() + " has no values per channel: batch norm needs N·H·W ≥ 1");
}

}  // namespace

// --- batch norm -------------------------------------------------------------------------------

tensor backend::batch_norm_forward_train(const tensor& x, const tensor& gamma, const tensor& beta, float eps,
                                         batch_norm_saved& saved) {
  const char* op = "batch_norm_forward_train";
  require(op, "x", x, 4, "(N, C, H, W)");
  require_vector(op, "gamma", gamma, x.dim(1), "x's channels");
  require_vector(op, "beta", beta, x.dim(1), "x's channels");
  require_values_per_channel(op, x);
  if (!(eps >= 0.f)) fail_op(op, "eps = " + std::to_string(eps) + " must be ≥ 0");
  return batch_norm_forward_train_impl(x, gamma, beta, eps, saved);
}

void backend::batch_norm_update_running(const batch_norm_saved& saved, int64_t count_per_channel, float eps,
                                        float momentum, tensor& running_mean, tensor& running_var) {
  const char* op = "batch_norm_update_running";
  require(op, "saved.mean", saved.mean, 1, "(C) from batch_norm_forward_train");
  const int64_t channels = saved.mean.dim(0);
  require_vector(op, "saved.inv_std", saved.inv_std, channels, "saved.mean");
  require_vector(op, "running_mean", running_mean, channels, "saved.mean");
  require_vector(op, "running_var", running_var, channels, "saved.mean");
  if (count_per_channel < 2)
    fail_op(op, "count_per_channel = " + std::to_string(count_per_channel) +
                    ": the unbiased variance needs at least 2 values per channel (N·H·W ≥ 2)");
  if (!(momentum >= 0.f && momentum <= 1.f))
    fail_op(op, "momentum = " + std::to_string(momentum) + " must be in [0, 1]");
  batch_norm_update_running_impl(saved, count_per_channel, eps, momentum, running_mean, running_var);
}

tensor backend::batch_norm_forward_eval(const tensor& x, const tensor& gamma, const tensor& beta,
                                        const tensor& running_mean, const tensor& running_var, float eps) {
  const char* op = "batch_norm_forward_eval";
  require(op, "x", x, 4, "(N, C, H, W)");
  const int64_t channels = x.dim(1);
  require_vector(op, "gamma", gamma, channels, "x's channels");
  require_vector(op, "beta", beta, channels, "x's channels");
  require_values_per_channel(op, x);
  require_vector(op, "running_mean", running_mean, channels, "x's channels");
  require_vector(op, "running_var", running_var, channels, "x's channels");
  return batch_norm_forward_eval_impl(x, gamma, beta, running_mean, running_var, eps);
}

tensor backend::batch_norm_backward(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                    const tensor& dy, tensor& dgamma, tensor& dbeta) {
  const char* op = "batch_norm_backward";
  require(op, "x", x, 4, "(N, C, H, W)");
  const int64_t channels = x.dim(1);
  require_vector(op, "gamma", gamma, channels, "x's channels");
  require_vector(op, "saved.mean", saved.mean, channels, "x's channels");
  require_vector(op, "saved.inv_std", saved.inv_std, channels, "x's channels");
  require(op, "dy", dy, 4, "(N, C, H, W)");
  require_same_shape(op, "dy", dy, "x", x);
  require_vector(op, "dgamma", dgamma, channels, "x's channels");
  require_vector(op, "dbeta", dbeta, channels, "x's channels");
  require_values_per_channel(op, x);
  return batch_norm_backward_impl(x, gamma, saved, dy, dgamma, dbeta);
}

// --- pointwise --------------------------------------------------------------------------------

tensor backend::relu_forward(const tensor& x) {
  require("relu_forward", "x", x);
  return relu_forward_impl(x);
}

tensor backend::relu_backward(const tensor& y, const tensor& dy) {
  require("relu_backward", "y", y);
  require("relu_backward", "dy", dy);
  require_same_shape("relu_backward", "y", y, "dy", dy);
  return relu_backward_impl(y, dy);
}

tensor backend::add(const tensor& a, const tensor& b) {
  require("add", "a", a);
  require("add", "b", b);
  require_same_shape("add", "a", a, "b", b);
  return add_impl(a, b);
}

tensor backend::sub(const tensor& a, const tensor& b) {
  require("sub", "a", a);
  require("sub", "b", b);
  require_same_shape("sub", "a", a, "b", b);
  return sub_impl(a, b);
}

void backend::add_inplace(tensor& a, const tensor& b) {
  require("add_inplace", "a", a);
  require("add_inplace", "b", b);
  require_same_shape("add_inplace", "a", a, "b", b);
  add_inplace_impl(a, b);
}

// --- pooling ----------------------------------------------------------------------------------

tensor backend::max_pool2x2_forward(const tensor& x) {
  require("max_pool2x2_forward", "x", x, 4, "(N, C, H, W)");
  require_even_plane("max_pool2x2_forward", x);
  return max_pool2x2_forward_impl(x);
}

tensor backend::max_pool2x2_backward(const tensor& x, const tensor& dy) {
  const char* op = "max_pool2x2_backward";
  require(op, "x", x, 4, "(N, C, H, W)");
  require_even_plane(op, x);
  require(op, "dy", dy, 4, "(N, C, H/2, W/2)");
  if (dy.shape() != shape_t{x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2})
    fail_op(op, "dy " + dy.shape_str() + " is not the pooled shape of x " + x.shape_str());
  return max_pool2x2_backward_impl(x, dy);
}

tensor backend::max_pool2x2_jvp(const tensor& x, const tensor& x_dot) {
  const char* op = "max_pool2x2_jvp";
  require(op, "x", x, 4, "(N, C, H, W)");
  require_even_plane(op, x);
  require(op, "x_dot", x_dot, 4, "(N, C, H, W)");
  require_same_shape(op, "x_dot", x_dot, "x", x);
  return max_pool2x2_jvp_impl(x, x_dot);
}

tensor backend::global_avg_pool_forward(const tensor& x) {
  require("global_avg_pool_forward", "x", x, 4, "(N, C, H, W)");
  if (x.dim(2) * x.dim(3) < 1)
    fail_op("global_avg_pool_forward", "x " + x.shape_str() + " has an empty plane: nothing to average");
  return global_avg_pool_forward_impl(x);
}

tensor backend::global_avg_pool_backward(const tensor& dy, const shape_t& x_shape) {
  const char* op = "global_avg_pool_backward";
  require(op, "dy", dy, 2, "(N, C)");
  if (x_shape.size() != 4 || dy.shape() != shape_t{x_shape[0], x_shape[1]})
    fail_op(op, "dy " + dy.shape_str() + " does not match x_shape " + to_string(x_shape) +
                    ": expected x (N, C, H, W) and dy (N, C)");
  if (x_shape[2] * x_shape[3] < 1) fail_op(op, "x_shape " + to_string(x_shape) + " has an empty plane");
  return global_avg_pool_backward_impl(dy, x_shape);
}

// --- linear -----------------------------------------------------------------------------------

tensor backend::linear_forward(const tensor& x, const tensor& w, const tensor& b) {
  const char* op = "linear_forward";
  require(op, "x", x, 2, "(N, I)");
  require(op, "w", w, 2, "(O, I)");
  if (w.dim(1) != x.dim(1))
    fail_op(op, "x " + x.shape_str() + " has " + std::to_string(x.dim(1)) + " features but w " +
                    w.shape_str() + " expects " + std::to_string(w.dim(1)));
  if (b.defined()) require_vector(op, "b", b, w.dim(0), "w's outputs (O)");
  return linear_forward_impl(x, w, b);
}

tensor backend::linear_backward_data(const tensor& dy, const tensor& w) {
  const char* op = "linear_backward_data";
  require(op, "dy", dy, 2, "(N, O)");
  require(op, "w", w, 2, "(O, I)");
  if (dy.dim(1) != w.dim(0))
    fail_op(op, "dy " + dy.shape_str() + " has " + std::to_string(dy.dim(1)) + " outputs but w " +
                    w.shape_str() + " has " + std::to_string(w.dim(0)));
  return linear_backward_data_impl(dy, w);
}

void backend::linear_backward_weight(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  const char* op = "linear_backward_weight";
  require(op, "x", x, 2, "(N, I)");
  require(op, "dy", dy, 2, "(N, O)");
  require(op, "dw", dw, 2, "(O, I)");
  const int64_t in = x.dim(1), out = dy.dim(1);
  if (dy.dim(0) != x.dim(0))
    fail_op(op, "x " + x.shape_str() + " and dy " + dy.shape_str() + " have different batch sizes");
  if (dw.shape() != shape_t{out, in})
    fail_op(op, "dw " + dw.shape_str() + " must be (O, I) = " + to_string({out, in}) + " for x " +
                    x.shape_str() + " and dy " + dy.shape_str());
  if (db.defined()) require_vector(op, "db", db, out, "dy's outputs (O)");
  linear_backward_weight_impl(x, dy, dw, db);
}

// --- channels ---------------------------------------------------------------------------------

std::pair<tensor, tensor> backend::split_channels(const tensor& x) {
  require("split_channels", "x", x, 4, "(N, 2C, H, W)");
  if (x.dim(1) % 2)
    fail_op("split_channels", "x " + x.shape_str() + " has " + std::to_string(x.dim(1)) +
                                  " channels, expected an even number: the split makes two equal halves");
  return split_channels_impl(x);
}

tensor backend::concat_channels(const tensor& a, const tensor& b) {
  require("concat_channels", "a", a, 4, "(N, C, H, W)");
  require("concat_channels", "b", b, 4, "(N, C, H, W)");
  require_same_shape("concat_channels", "a", a, "b", b);
  return concat_channels_impl(a, b);
}

// --- loss ---------------------------------------------------------------------------

namespace {

/// The loss ops' checks of what only the host sees: the labels against the logits.
void check_labels(const char* op, const tensor& logits, const std::vector<int32_t>& labels) {
  const int64_t n = logits.dim(0), classes = logits.dim(1);
  if (n < 1 || classes < 1)
    fail_op(op, "logits " + logits.shape_str() + " is empty: need N ≥ 1 rows of K ≥ 1 classes");
  if (static_cast<int64_t>(labels.size()) != n)
    fail_op(op, std::to_string(labels.size()) + " labels for logits " + logits.shape_str() +
                    ": need one per row");
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] < 0 || labels[i] >= classes)
      fail_op(op, "labels[" + std::to_string(i) + "] = " + std::to_string(labels[i]) + " is outside [0, " +
                      std::to_string(classes) + "): logits " + logits.shape_str() + " have " +
                      std::to_string(classes) + " classes");
}

}  // namespace

float backend::softmax_cross_entropy(const tensor& logits, const std::vector<int32_t>& labels,
                                     tensor* dlogits, int64_t* correct) {
  const char* op = "softmax_cross_entropy";
  require(op, "logits", logits, 2, "(N, K)");
  check_labels(op, logits, labels);
  return softmax_cross_entropy_impl(logits, labels, dlogits, correct);
}

deferred_loss backend::softmax_cross_entropy_deferred(const tensor& logits,
                                                      const std::vector<int32_t>& labels, tensor* dlogits) {
  const char* op = "softmax_cross_entropy_deferred";
  require(op, "logits", logits, 2, "(N, K)");
  check_labels(op, logits, labels);
  return softmax_cross_entropy_deferred_impl(logits, labels, dlogits);
}

deferred_loss backend::softmax_cross_entropy_deferred_impl(const tensor& logits,
                                                           const std::vector<int32_t>& labels,
                                                           tensor* dlogits) {
  // The loss as the synchronous op gives it, kept so that get() returns those very bits.
  struct done final : deferred_loss::state {
    float loss = 0;
    float mean() const override { return loss; }
  };
  auto s = std::make_shared<done>();
  s->loss = softmax_cross_entropy_impl(logits, labels, dlogits, &s->hits);
  return deferred_loss(s);
}

float deferred_loss::get(int64_t* correct) const {
  if (!state_) throw std::logic_error("deferred_loss::get: no loss was queued");
  state_->wait();
  if (correct) *correct = state_->hits;
  return state_->mean();
}

}  // namespace petra
