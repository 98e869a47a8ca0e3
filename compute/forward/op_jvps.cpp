// Forward mode of the backend's ops, each composed from backend ops (only the max pool's tangent
// needed an op of its own).
#include "compute/forward/op_jvps.hpp"

#include <stdexcept>

namespace petra {

namespace {

/// out += t, where `out` is a fresh tensor of ours or undefined (zero); `t` may be zero too.
void accumulate(backend& be, tensor& out, const tensor& t) {
  if (!t.defined()) return;
  if (out.defined())
    be.add_inplace(out, t);
  else
    out = t;
}

tensor or_zeros(backend& be, const tensor& t, const shape_t& shape) {
  return t.defined() ? t : be.zeros(shape);
}

}  // namespace

tensor conv2d_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& w, const tensor& w_dot,
                      const tensor& b_dot, conv2d_params p) {
  tensor y_dot;
  if (x_dot.defined()) y_dot = be.conv2d_forward(x_dot, w, tensor{}, p);
  if (w_dot.defined() || b_dot.defined())
    accumulate(be, y_dot, be.conv2d_forward(x, or_zeros(be, w_dot, w.shape()), b_dot, p));
  return y_dot;
}

tensor linear_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& w, const tensor& w_dot,
                      const tensor& b_dot) {
  tensor y_dot;
  if (x_dot.defined()) y_dot = be.linear_forward(x_dot, w, tensor{});
  if (w_dot.defined() || b_dot.defined())
    accumulate(be, y_dot, be.linear_forward(x, or_zeros(be, w_dot, w.shape()), b_dot));
  return y_dot;
}

tensor batch_norm_train_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                                const tensor& gamma_dot, const tensor& beta_dot,
                                const batch_norm_saved& saved, float eps) {
  tensor y_dot;
  if (x_dot.defined()) {
    tensor unused_dgamma = be.zeros(gamma.shape()), unused_dbeta = be.zeros(gamma.shape());
    y_dot = be.batch_norm_backward(x, gamma, saved, x_dot, unused_dgamma, unused_dbeta);
  }
  if (gamma_dot.defined() || beta_dot.defined()) {
    // γ̇·x̂ + β̇ is batch norm's own forward with (γ̇, β̇) as its affine parameters.
    batch_norm_saved same_statistics;
    accumulate(be, y_dot,
               be.batch_norm_forward_train(x, or_zeros(be, gamma_dot, gamma.shape()),
                                           or_zeros(be, beta_dot, gamma.shape()), eps, same_statistics));
  }
  return y_dot;
}

tensor batch_norm_eval_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                               const tensor& gamma_dot, const tensor& beta_dot, const tensor& running_mean,
                               const tensor& running_var, float eps) {
  tensor y_dot;
  if (x_dot.defined()) {
    const tensor zero = be.zeros(gamma.shape());
    y_dot = be.batch_norm_forward_eval(x_dot, gamma, zero, zero, running_var, eps);
  }
  if (gamma_dot.defined() || beta_dot.defined())
    accumulate(
        be, y_dot,
        be.batch_norm_forward_eval(x, or_zeros(be, gamma_dot, gamma.shape()),
                                   or_zeros(be, beta_dot, gamma.shape()), running_mean, running_var, eps));
  return y_dot;
}

tensor relu_tangent(backend& be, const tensor& y, const tensor& x_dot) {
  return x_dot.defined() ? be.relu_backward(y, x_dot) : tensor{};
}

tensor max_pool2x2_tangent(backend& be, const tensor& x, const tensor& x_dot) {
  return x_dot.defined() ? be.max_pool2x2_jvp(x, x_dot) : tensor{};
}

tensor global_avg_pool_tangent(backend& be, const tensor& x_dot) {
  return x_dot.defined() ? be.global_avg_pool_forward(x_dot) : tensor{};
}

tensor add_tangents(backend& be, const tensor& a_dot, const tensor& b_dot) {
  if (!a_dot.defined()) return b_dot;
  if (!b_dot.defined()) return a_dot;
  return be.add(a_dot, b_dot);
}

tensor sub_tangents(backend& be, const tensor& a_dot, const tensor& b_dot) {
  if (!b_dot.defined()) return a_dot;
  return be.sub(or_zeros(be, a_dot, b_dot.shape()), b_dot);
}

std::pair<tensor, tensor> split_channels_tangent(backend& be, const tensor& x_dot) {
  if (!x_dot.defined()) return {};
  return be.split_channels(x_dot);
}

tensor concat_channels_tangent(backend& be, const tensor& a_dot, const shape_t& a_shape, const tensor& b_dot,
                               const shape_t& b_shape) {
  if (!a_dot.defined() && !b_dot.defined()) return {};
  return be.concat_channels(or_zeros(be, a_dot, a_shape), or_zeros(be, b_dot, b_shape));
}

double loss_jvp::mean() const {
  double sum = 0;
  for (double d : per_sample) sum += d;
  return per_sample.empty() ? 0.0 : sum / static_cast<double>(per_sample.size());
}

loss_jvp softmax_cross_entropy_jvp(backend& be, const tensor& logits, const tensor& logits_dot,
                                   const std::vector<int32_t>& labels) {
  loss_jvp out;
  tensor dlogits;
  out.loss = be.softmax_cross_entropy(logits, labels, &dlogits, &out.correct);
  const int64_t n = logits.dim(0), classes = logits.dim(1);
  out.per_sample.assign(static_cast<std::size_t>(n), 0.0);
  if (!logits_dot.defined()) return out;
  if (logits_dot.shape() != logits.shape())
    throw std::invalid_argument("softmax_cross_entropy_jvp: logits_dot " + logits_dot.shape_str() +
                                " must have the shape of logits " + logits.shape_str());
  // dlogits = (softmax − onehot)/N: N times its row's dot product with ż is ℓ̇_n.
  const tensor gradient = be.to_host(dlogits), tangent = be.to_host(logits_dot);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k)
      sum += static_cast<double>(gradient.data()[i * classes + k]) * tangent.data()[i * classes + k];
    out.per_sample[static_cast<std::size_t>(i)] = sum * static_cast<double>(n);
  }
  return out;
}

}  // namespace petra
