// Forward mode of the layers: each computes its primal exactly as its forward does (same ops, same
// tape entries, so a backward may follow) and its tangent from compute/forward/op_jvps.
#include <tuple>

#include "compute/forward/op_jvps.hpp"
#include "compute/layers/batch_norm.hpp"
#include "compute/layers/conv2d.hpp"
#include "compute/layers/conv_chain.hpp"
#include "compute/layers/linear.hpp"

namespace petra {

std::pair<tensor, tensor> conv2d_layer::jvp(const tensor& x, const tensor& x_dot, tape* t,
                                            const parameter_tangents& theta_dot) {
  tensor y = forward(x, t);
  return {y,
          conv2d_tangent(be_, x, x_dot, weight_.value, theta_dot.of(weight_), theta_dot.of(bias_), params_)};
}

std::pair<tensor, tensor> linear_layer::jvp(const tensor& x, const tensor& x_dot, tape* t,
                                            const parameter_tangents& theta_dot) {
  tensor y = forward(x, t);
  return {y, linear_tangent(be_, x, x_dot, weight_.value, theta_dot.of(weight_), theta_dot.of(bias_))};
}

std::pair<tensor, tensor> batch_norm_layer::jvp(const tensor& x, const tensor& x_dot, pass mode, tape* t,
                                                const parameter_tangents& theta_dot) {
  const tensor gamma_dot = theta_dot.of(gamma_), beta_dot = theta_dot.of(beta_);
  if (mode == pass::eval) {
    tensor y = forward(x, mode, t);
    return {y, batch_norm_eval_tangent(be_, x, x_dot, gamma_.value, gamma_dot, beta_dot, running_mean_,
                                       running_var_, eps)};
  }
  // The training forward's steps, keeping the batch statistics that the tangent needs.
  batch_norm_saved saved;
  tensor y = be_.batch_norm_forward_train(x, gamma_.value, beta_.value, eps, saved);
  if (mode == pass::train)
    be_.batch_norm_update_running(saved, x.dim(0) * x.dim(2) * x.dim(3), eps, momentum, running_mean_,
                                  running_var_);
  if (t) {
    t->push(x);
    t->push(saved.mean);
    t->push(saved.inv_std);
  }
  return {y, batch_norm_train_tangent(be_, x, x_dot, gamma_.value, gamma_dot, beta_dot, saved, eps)};
}

std::pair<tensor, tensor> relu_jvp(backend& be, const tensor& x, const tensor& x_dot, tape* t) {
  tensor y = relu_forward(be, x, t);
  return {y, relu_tangent(be, y, x_dot)};
}

std::pair<tensor, tensor> conv_chain::jvp(const tensor& x, const tensor& x_dot, pass mode, tape* t,
                                          const parameter_tangents& theta_dot) {
  tensor h = x, h_dot = x_dot;
  for (auto& u : units_) {
    std::tie(h, h_dot) = u->conv.jvp(h, h_dot, t, theta_dot);
    std::tie(h, h_dot) = u->bn.jvp(h, h_dot, mode, t, theta_dot);
    if (u->relu) std::tie(h, h_dot) = relu_jvp(be_, h, h_dot, t);
  }
  return {h, h_dot};
}

}  // namespace petra
