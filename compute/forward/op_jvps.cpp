// Forward mode of the backend's ops, each composed from backend ops (only the max pool's tangent
// needed an op of its own). A tangent may stack m tangents of the primal (compute/forward/stacked):
// what is linear in it and per sample takes the stack in one call, what depends on the primal per
// sample (ReLU's mask, the pool's argmax) or on batch statistics (batch norm) goes group by group,
// and a parameter tangent's term, the same for every group, is computed once and repeated.
#include "compute/forward/op_jvps.hpp"

#include <stdexcept>

#include "compute/forward/stacked.hpp"

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

/// The groups of the input tangent `x_dot` over a primal of batch n: 1 when it is zero.
int64_t groups_of(const tensor& x_dot, int64_t n, const char* op) {
  return x_dot.defined() ? stacked_groups(x_dot, n, op, "x_dot") : 1;
}

/// `a` and `b` at one batch: a term that holds a single group (a parameter tangent's, the same for
/// every stacked tangent) is repeated to the other's groups.
void match_groups(backend& be, tensor& a, tensor& b) {
  if (!a.defined() || !b.defined() || a.dim(0) == b.dim(0)) return;
  if (a.dim(0) < b.dim(0))
    a = tile_batch(be, a, stacked_groups(b, a.dim(0), "tangent", "term"));
  else
    b = tile_batch(be, b, stacked_groups(a, b.dim(0), "tangent", "term"));
}

shape_t with_batch(shape_t shape, int64_t batch) {
  shape.at(0) = batch;
  return shape;
}

}  // namespace

tensor conv2d_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& w, const tensor& w_dot,
                      const tensor& b_dot, conv2d_params p) {
  const int64_t m = groups_of(x_dot, x.dim(0), "conv2d_tangent");
  tensor y_dot;
  if (x_dot.defined()) y_dot = be.conv2d_forward(x_dot, w, tensor{}, p);  // all groups in one call
  if (w_dot.defined() || b_dot.defined())
    accumulate(be, y_dot, tile_batch(be, be.conv2d_forward(x, or_zeros(be, w_dot, w.shape()), b_dot, p), m));
  return y_dot;
}

tensor linear_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& w, const tensor& w_dot,
                      const tensor& b_dot) {
  const int64_t m = groups_of(x_dot, x.dim(0), "linear_tangent");
  tensor y_dot;
  if (x_dot.defined()) y_dot = be.linear_forward(x_dot, w, tensor{});
  if (w_dot.defined() || b_dot.defined())
    accumulate(be, y_dot, tile_batch(be, be.linear_forward(x, or_zeros(be, w_dot, w.shape()), b_dot), m));
  return y_dot;
}

tensor batch_norm_train_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                                const tensor& gamma_dot, const tensor& beta_dot,
                                const batch_norm_saved& saved, float eps) {
  const int64_t m = groups_of(x_dot, x.dim(0), "batch_norm_train_tangent");
  tensor y_dot;
  if (x_dot.defined()) {
    // J_x holds the statistics' tangents, sums over one batch: each group is its own batch.
    tensor unused_dgamma = be.zeros(gamma.shape()), unused_dbeta = be.zeros(gamma.shape());
    y_dot = per_group(be, x_dot, x.dim(0), [&](const tensor& group) {
      return be.batch_norm_backward(x, gamma, saved, group, unused_dgamma, unused_dbeta);
    });
  }
  if (gamma_dot.defined() || beta_dot.defined()) {
    // γ̇·x̂ + β̇ is batch norm's own forward with (γ̇, β̇) as its affine parameters.
    batch_norm_saved same_statistics;
    accumulate(
        be, y_dot,
        tile_batch(be,
                   be.batch_norm_forward_train(x, or_zeros(be, gamma_dot, gamma.shape()),
                                               or_zeros(be, beta_dot, gamma.shape()), eps, same_statistics),
                   m));
  }
  return y_dot;
}

tensor batch_norm_eval_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                               const tensor& gamma_dot, const tensor& beta_dot, const tensor& running_mean,
                               const tensor& running_var, float eps) {
  const int64_t m = groups_of(x_dot, x.dim(0), "batch_norm_eval_tangent");
  tensor y_dot;
  if (x_dot.defined()) {  // per sample and linear in ẋ: all groups in one call
    const tensor zero = be.zeros(gamma.shape());
    y_dot = be.batch_norm_forward_eval(x_dot, gamma, zero, zero, running_var, eps);
  }
  if (gamma_dot.defined() || beta_dot.defined())
    accumulate(be, y_dot,
               tile_batch(be,
                          be.batch_norm_forward_eval(x, or_zeros(be, gamma_dot, gamma.shape()),
                                                     or_zeros(be, beta_dot, gamma.shape()), running_mean,
                                                     running_var, eps),
                          m));
  return y_dot;
}

tensor relu_tangent(backend& be, const tensor& y, const tensor& x_dot) {
  if (!x_dot.defined()) return {};
  stacked_groups(x_dot, y.dim(0), "relu_tangent", "x_dot");
  // A call per group: on the CPU as fast as one call on the mask repeated m times, or faster (m = 3,
  // 64×16×28×28: 1.9 against 2.7 ms), and no copies of y.
  return per_group(be, x_dot, y.dim(0), [&](const tensor& group) { return be.relu_backward(y, group); });
}

tensor max_pool2x2_tangent(backend& be, const tensor& x, const tensor& x_dot) {
  if (!x_dot.defined()) return {};
  stacked_groups(x_dot, x.dim(0), "max_pool2x2_tangent", "x_dot");
  // Per group: repeating x would copy four times the output's size.
  return per_group(be, x_dot, x.dim(0), [&](const tensor& group) { return be.max_pool2x2_jvp(x, group); });
}

tensor global_avg_pool_tangent(backend& be, const tensor& x_dot) {
  return x_dot.defined() ? be.global_avg_pool_forward(x_dot) : tensor{};
}

tensor layer_norm_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                          const tensor& gamma_dot, const tensor& beta_dot, const layer_norm_saved& saved,
                          float eps) {
  const int64_t m = groups_of(x_dot, x.dim(0), "layer_norm_tangent");
  tensor y_dot;
  if (x_dot.defined())  // J_x depends on x per token: group by group
    y_dot = per_group(be, x_dot, x.dim(0),
                      [&](const tensor& group) { return be.layer_norm_jvp(x, gamma, saved, group); });
  if (gamma_dot.defined() || beta_dot.defined()) {
    // γ̇·x̂ + β̇ is layer norm's own forward with (γ̇, β̇) as its affine parameters.
    layer_norm_saved same_statistics;
    accumulate(be, y_dot,
               tile_batch(be,
                          be.layer_norm_forward(x, or_zeros(be, gamma_dot, gamma.shape()),
                                                or_zeros(be, beta_dot, gamma.shape()), eps, same_statistics),
                          m));
  }
  return y_dot;
}

tensor gelu_tangent(backend& be, const tensor& x, const tensor& x_dot) {
  if (!x_dot.defined()) return {};
  stacked_groups(x_dot, x.dim(0), "gelu_tangent", "x_dot");
  return per_group(be, x_dot, x.dim(0), [&](const tensor& group) { return be.gelu_backward(x, group); });
}

tensor softmax_tangent(backend& be, const tensor& y, const tensor& x_dot) {
  if (!x_dot.defined()) return {};
  stacked_groups(x_dot, y.dim(0), "softmax_tangent", "x_dot");
  return per_group(be, x_dot, y.dim(0), [&](const tensor& group) { return be.softmax_backward(y, group); });
}

tensor batched_matmul_tangent(backend& be, const tensor& a, const tensor& a_dot, const tensor& b,
                              const tensor& b_dot, bool transpose_a, bool transpose_b) {
  // Item i of ȧ multiplies item i of b: a stack of m tangents goes group by group.
  tensor from_a, from_b;
  if (a_dot.defined())
    from_a = per_group(be, a_dot, a.dim(0), [&](const tensor& group) {
      return be.batched_matmul(group, b, transpose_a, transpose_b);
    });
  if (b_dot.defined())
    from_b = per_group(be, b_dot, b.dim(0), [&](const tensor& group) {
      return be.batched_matmul(a, group, transpose_a, transpose_b);
    });
  return add_tangents(be, from_a, from_b);
}

tensor token_mean_tangent(backend& be, const tensor& x_dot) {
  return x_dot.defined() ? be.token_mean_forward(x_dot) : tensor{};
}

tensor add_tangents(backend& be, const tensor& a_dot, const tensor& b_dot) {
  if (!a_dot.defined()) return b_dot;
  if (!b_dot.defined()) return a_dot;
  tensor a = a_dot, b = b_dot;
  match_groups(be, a, b);
  return be.add(a, b);
}

tensor sub_tangents(backend& be, const tensor& a_dot, const tensor& b_dot) {
  if (!b_dot.defined()) return a_dot;
  tensor a = or_zeros(be, a_dot, b_dot.shape()), b = b_dot;
  match_groups(be, a, b);
  return be.sub(a, b);
}

std::pair<tensor, tensor> split_channels_tangent(backend& be, const tensor& x_dot) {
  if (!x_dot.defined()) return {};
  return be.split_channels(x_dot);
}

tensor concat_channels_tangent(backend& be, const tensor& a_dot, const shape_t& a_shape, const tensor& b_dot,
                               const shape_t& b_shape) {
  if (!a_dot.defined() && !b_dot.defined()) return {};
  // A zero half has the other's batch (its stacked groups).
  const int64_t batch = a_dot.defined() ? a_dot.dim(0) : b_dot.dim(0);
  tensor a = or_zeros(be, a_dot, with_batch(a_shape, batch)),
         b = or_zeros(be, b_dot, with_batch(b_shape, batch));
  match_groups(be, a, b);
  return be.concat_channels(a, b);
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
  if (!logits_dot.defined()) {
    out.per_sample.assign(static_cast<std::size_t>(n), 0.0);
    return out;
  }
  if (logits_dot.rank() != 2 || logits_dot.dim(1) != classes)
    throw std::invalid_argument("softmax_cross_entropy_jvp: logits_dot " + logits_dot.shape_str() +
                                " must have the shape of logits " + logits.shape_str() +
                                " (or stack m of them: (m·N, classes))");
  const int64_t m = stacked_groups(logits_dot, n, "softmax_cross_entropy_jvp", "logits_dot");
  out.per_sample.assign(static_cast<std::size_t>(m * n), 0.0);
  // dlogits = (softmax − onehot)/N: N times its row's dot product with ż is ℓ̇_n. One host copy
  // of each, whatever the number of stacked tangents.
  const tensor gradient = be.to_host(dlogits), tangent = be.to_host(logits_dot);
  for (int64_t row = 0; row < m * n; ++row) {
    const float* g = gradient.data() + (row % n) * classes;
    const float* t = tangent.data() + row * classes;
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += static_cast<double>(g[k]) * t[k];
    out.per_sample[static_cast<std::size_t>(row)] = sum * static_cast<double>(n);
  }
  return out;
}

}  // namespace petra
