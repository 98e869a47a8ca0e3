// Layer norm and linear over tokens.
#include "compute/layers/token_layers.hpp"

#include "compute/forward/op_jvps.hpp"
#include "compute/init.hpp"
#include "compute/layers/make_parameter.hpp"

namespace petra {

tensor as_rows(const tensor& x) {
  if (!x.defined()) return {};
  const int64_t c = x.dim(x.rank() - 1);
  return x.reshaped({c == 0 ? 0 : x.numel() / c, c});
}

tensor rows_like(const tensor& rows, const shape_t& like) {
  if (!rows.defined()) return {};
  shape_t shape = like;
  int64_t inner = 1;  // rows per first-axis entry of `like`
  for (std::size_t i = 1; i + 1 < like.size(); ++i) inner *= like[i];
  shape.front() = inner == 0 ? 0 : rows.dim(0) / inner;
  shape.back() = rows.dim(1);
  return rows.reshaped(shape);
}

// --- layer norm -------------------------------------------------------------------------------

layer_norm_layer::layer_norm_layer(backend& be, const std::string& name, int features) : be_(be) {
  gamma_ = make_parameter(be, name + ".weight", filled({features}, 1.f), false);
  beta_ = make_parameter(be, name + ".bias", filled({features}, 0.f), false);
}

tensor layer_norm_layer::forward_on(backend& on, const tensor& x, tape* t) {
  layer_norm_saved saved;
  tensor y = on.layer_norm_forward(x, gamma_.value, beta_.value, eps, saved);
  if (t) {
    t->push(x);
    t->push(saved.mean);
    t->push(saved.inv_std);
  }
  return y;
}

tensor layer_norm_layer::backward(tape& t, const tensor& dy) {
  layer_norm_saved saved;
  saved.inv_std = t.pop();
  saved.mean = t.pop();
  const tensor x = t.pop();
  return be_.layer_norm_backward(x, gamma_.value, saved, dy, gamma_.grad, beta_.grad);
}

std::pair<tensor, tensor> layer_norm_layer::jvp(const tensor& x, const tensor& x_dot, tape* t,
                                                const parameter_tangents& theta_dot) {
  layer_norm_saved saved;
  tensor y = be_.layer_norm_forward(x, gamma_.value, beta_.value, eps, saved);
  if (t) {
    t->push(x);
    t->push(saved.mean);
    t->push(saved.inv_std);
  }
  return {y, layer_norm_tangent(be_, x, x_dot, gamma_.value, theta_dot.of(gamma_), theta_dot.of(beta_), saved,
                                eps)};
}

// --- linear -----------------------------------------------------------------------------------

token_linear::token_linear(backend& be, const std::string& name, int in_features, int out_features,
                           uint64_t seed)
    : be_(be) {
  weight_ =
      make_parameter(be, name + ".weight",
                     truncated_normal({out_features, in_features}, 0.02f, seed, name + ".weight"), true);
  bias_ = make_parameter(be, name + ".bias", filled({out_features}, 0.f), false);
}

tensor token_linear::forward_on(backend& on, const tensor& x, tape* t) {
  if (t) t->push(x);
  return rows_like(on.linear_forward(as_rows(x), weight_.value, bias_.value), x.shape());
}

tensor token_linear::backward(tape& t, const tensor& dy) {
  const tensor x = t.pop();
  const tensor rows = as_rows(x), dy_rows = as_rows(dy);
  be_.linear_backward_weight(rows, dy_rows, weight_.grad, bias_.grad);
  return be_.linear_backward_data(dy_rows, weight_.value).reshaped(x.shape());
}

std::pair<tensor, tensor> token_linear::jvp(const tensor& x, const tensor& x_dot, tape* t,
                                            const parameter_tangents& theta_dot) {
  tensor y = forward(x, t);
  const tensor y_dot = linear_tangent(be_, as_rows(x), as_rows(x_dot), weight_.value, theta_dot.of(weight_),
                                      theta_dot.of(bias_));
  return {y, rows_like(y_dot, y.shape())};
}

}  // namespace petra
