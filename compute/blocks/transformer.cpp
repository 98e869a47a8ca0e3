// Reversible transformer block: forward, inverse, the rebuild that keeps its tape, the backward
// from it, forward mode.
#include "compute/blocks/transformer.hpp"

#include <stdexcept>

#include "compute/forward/op_jvps.hpp"

namespace petra {

transformer_block::transformer_block(backend& be, const std::string& name, int width, int heads, int hidden,
                                     uint64_t seed)
    : block(name),
      be_(be),
      width_(width),
      f_(be, name + ".attn", width, heads, seed),
      g_(be, name + ".mlp", width, hidden, seed) {}

void transformer_block::expect_tokens(const activation& x, const char* what) const {
  expect_streams(*this, x, true, what);
  for (const tensor* s : {&x.x1, &x.x2})
    if (s->rank() != 3 || s->dim(2) != width_ || s->shape() != x.x1.shape())
      throw std::invalid_argument(name() + " (transformer): " + what +
                                  " streams must both be tokens (N, T, " + std::to_string(width_) +
                                  "), got " + x.x1.shape_str() + " and " + x.x2.shape_str());
}

activation transformer_block::forward(const activation& x, pass, tape* t) {
  expect_tokens(x, "input");
  const tensor y1 = be_.add(x.x1, f_.forward_on(be_, x.x2, t));
  return {y1, be_.add(x.x2, g_.forward_on(be_, y1, t))};
}

activation transformer_block::backward(tape& t, const activation& dy) {
  tensor d1 = g_.backward(t, dy.x2);  // J_G(y1)ᵀ dy2, fresh
  be_.add_inplace(d1, dy.x1);
  tensor dx2 = f_.backward(t, d1);  // J_F(x2)ᵀ dy1', fresh
  be_.add_inplace(dx2, dy.x2);
  return {d1, dx2};
}

activation transformer_block::inverse(const activation& y) {
  expect_tokens(y, "output");
  const tensor x2 = be_.sub(y.x2, g_.forward_on(be_, y.x1, nullptr));
  return {be_.sub(y.x1, f_.forward_on(be_, x2, nullptr)), x2};
}

activation transformer_block::rebuild_input(backend& on, const activation& y, tape& t) {
  expect_tokens(y, "output");
  // G runs first here but F's entries must lie below G's, as the forward pushed them: G's go on a
  // tape of their own and move onto `t` once F's are there.
  tape g_tape;
  const tensor x2 = on.sub(y.x2, g_.forward_on(on, y.x1, &g_tape));
  const tensor x1 = on.sub(y.x1, f_.forward_on(on, x2, &t));
  std::vector<tensor> g_entries;
  while (!g_tape.empty()) g_entries.push_back(g_tape.pop());
  for (auto it = g_entries.rbegin(); it != g_entries.rend(); ++it) t.push(*it);
  return {x1, x2};
}

std::pair<activation, activation> transformer_block::backward_from_output(const activation& y,
                                                                          const activation& dy) {
  expect_tokens(y, "output");
  expect_tokens(dy, "output gradient");
  tape t;
  const activation x = rebuild_input(be_, y, t);
  return {x, backward(t, dy)};
}

std::vector<parameter*> transformer_block::parameters() {
  std::vector<parameter*> out;
  f_.collect(out);
  g_.collect(out);
  return out;
}

// ẏ1 = ẋ1 + J_F ẋ2 + ∂F/∂θ θ̇, ẏ2 = ẋ2 + J_G ẏ1 + ∂G/∂θ θ̇.
std::pair<activation, activation> transformer_block::jvp_impl(const activation& x, const activation& x_dot,
                                                              pass, tape* t,
                                                              const parameter_tangents& theta_dot) {
  expect_tokens(x, "input");
  const auto [f, f_dot] = f_.jvp(x.x2, x_dot.x2, t, theta_dot);
  const tensor y1 = be_.add(x.x1, f), y1_dot = add_tangents(be_, x_dot.x1, f_dot);
  const auto [g, g_dot] = g_.jvp(y1, y1_dot, t, theta_dot);
  return {{y1, be_.add(x.x2, g)}, {y1_dot, add_tangents(be_, x_dot.x2, g_dot)}};
}

}  // namespace petra
