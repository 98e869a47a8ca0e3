// Multi-head self-attention and the MLP of a transformer block: forward, backward from the tape,
// forward mode.
#include "compute/layers/attention.hpp"

#include <cmath>
#include <stdexcept>

#include "compute/forward/op_jvps.hpp"

namespace petra {

namespace {

tensor scaled(backend& be, const tensor& x, float alpha) {
  return x.defined() ? be.scale(x, alpha) : tensor{};
}

}  // namespace

// --- attention --------------------------------------------------------------------------------

attention_branch::attention_branch(backend& be, const std::string& name, int width, int heads, uint64_t seed)
    : be_(be),
      heads_(heads),
      scale_(heads > 0 && width % heads == 0 ? static_cast<float>(1.0 / std::sqrt(width / heads)) : 0.f),
      norm_(be, name + ".norm", width),
      q_(be, name + ".q", width, width, seed),
      k_(be, name + ".k", width, width, seed),
      v_(be, name + ".v", width, width, seed),
      out_(be, name + ".out", width, width, seed) {
  if (heads <= 0 || width % heads != 0)
    throw std::invalid_argument(name + ": width " + std::to_string(width) + " is not divisible by " +
                                std::to_string(heads) + " heads");
}

tensor attention_branch::split_heads(backend& on, const tensor& x) const {
  if (!x.defined()) return {};
  const int64_t n = x.dim(0), t = x.dim(1), d = x.dim(2), dh = d / heads_;
  return on.transpose12(x.reshaped({n, t, heads_, dh})).reshaped({n * heads_, t, dh});
}

tensor attention_branch::merge_heads(backend& on, const tensor& x) const {
  if (!x.defined()) return {};
  const int64_t n = x.dim(0) / heads_, t = x.dim(1), dh = x.dim(2);
  return on.transpose12(x.reshaped({n, heads_, t, dh})).reshaped({n, t, heads_ * dh});
}

tensor attention_branch::forward_on(backend& on, const tensor& x, tape* t) {
  const tensor h = norm_.forward_on(on, x, t);
  const tensor q = split_heads(on, q_.forward_on(on, h, t)), k = split_heads(on, k_.forward_on(on, h, t)),
               v = split_heads(on, v_.forward_on(on, h, t));
  const tensor p = on.softmax_forward(on.scale(on.batched_matmul(q, k, false, true), scale_));  // (N·h, T, T)
  if (t) {
    t->push(q);
    t->push(k);
    t->push(v);
    t->push(p);
  }
  return out_.forward_on(on, merge_heads(on, on.batched_matmul(p, v, false, false)), t);
}

tensor attention_branch::backward(tape& t, const tensor& dy) {
  const tensor d_attended = split_heads(be_, out_.backward(t, dy));
  const tensor p = t.pop(), v = t.pop(), k = t.pop(), q = t.pop();
  auto [dp, dv] = be_.batched_matmul_backward(p, v, d_attended, false, false);
  const tensor ds = be_.scale(be_.softmax_backward(p, dp), scale_);
  auto [dq, dk] = be_.batched_matmul_backward(q, k, ds, false, true);
  tensor dh = v_.backward(t, merge_heads(be_, dv));
  be_.add_inplace(dh, k_.backward(t, merge_heads(be_, dk)));
  be_.add_inplace(dh, q_.backward(t, merge_heads(be_, dq)));
  return norm_.backward(t, dh);
}

std::pair<tensor, tensor> attention_branch::jvp(const tensor& x, const tensor& x_dot, tape* t,
                                                const parameter_tangents& theta_dot) {
  const auto [h, h_dot] = norm_.jvp(x, x_dot, t, theta_dot);
  const auto [q_rows, q_rows_dot] = q_.jvp(h, h_dot, t, theta_dot);
  const auto [k_rows, k_rows_dot] = k_.jvp(h, h_dot, t, theta_dot);
  const auto [v_rows, v_rows_dot] = v_.jvp(h, h_dot, t, theta_dot);
  const tensor q = split_heads(be_, q_rows), k = split_heads(be_, k_rows), v = split_heads(be_, v_rows);
  const tensor q_dot = split_heads(be_, q_rows_dot), k_dot = split_heads(be_, k_rows_dot),
               v_dot = split_heads(be_, v_rows_dot);
  const tensor p = be_.softmax_forward(be_.scale(be_.batched_matmul(q, k, false, true), scale_));
  const tensor s_dot = scaled(be_, batched_matmul_tangent(be_, q, q_dot, k, k_dot, false, true), scale_);
  const tensor p_dot = softmax_tangent(be_, p, s_dot);
  const tensor o = be_.batched_matmul(p, v, false, false);
  const tensor o_dot = batched_matmul_tangent(be_, p, p_dot, v, v_dot, false, false);
  if (t) {
    t->push(q);
    t->push(k);
    t->push(v);
    t->push(p);
  }
  return out_.jvp(merge_heads(be_, o), merge_heads(be_, o_dot), t, theta_dot);
}

void attention_branch::collect(std::vector<parameter*>& out) {
  norm_.collect(out);
  q_.collect(out);
  k_.collect(out);
  v_.collect(out);
  out_.collect(out);
}

// --- MLP --------------------------------------------------------------------------------------

mlp_branch::mlp_branch(backend& be, const std::string& name, int width, int hidden, uint64_t seed)
    : be_(be),
      norm_(be, name + ".norm", width),
      fc1_(be, name + ".fc1", width, hidden, seed),
      fc2_(be, name + ".fc2", hidden, width, seed) {}

tensor mlp_branch::forward_on(backend& on, const tensor& x, tape* t) {
  const tensor u = fc1_.forward_on(on, norm_.forward_on(on, x, t), t);
  if (t) t->push(u);
  return fc2_.forward_on(on, on.gelu_forward(u), t);
}

tensor mlp_branch::backward(tape& t, const tensor& dy) {
  const tensor da = fc2_.backward(t, dy);
  const tensor u = t.pop();
  return norm_.backward(t, fc1_.backward(t, be_.gelu_backward(u, da)));
}

std::pair<tensor, tensor> mlp_branch::jvp(const tensor& x, const tensor& x_dot, tape* t,
                                          const parameter_tangents& theta_dot) {
  const auto [h, h_dot] = norm_.jvp(x, x_dot, t, theta_dot);
  const auto [u, u_dot] = fc1_.jvp(h, h_dot, t, theta_dot);
  if (t) t->push(u);
  return fc2_.jvp(be_.gelu_forward(u), gelu_tangent(be_, u, u_dot), t, theta_dot);
}

void mlp_branch::collect(std::vector<parameter*>& out) {
  norm_.collect(out);
  fc1_.collect(out);
  fc2_.collect(out);
}

}  // namespace petra
