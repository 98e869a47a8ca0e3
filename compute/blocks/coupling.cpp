// Coupling block: forward, inverse, the rebuild that keeps its tape, and the backward from it.
#include "compute/blocks/coupling.hpp"

#include "compute/forward/op_jvps.hpp"

namespace petra {

coupling_block::coupling_block(backend& be, const std::string& name, const std::vector<conv_unit_spec>& f,
                               uint64_t seed)
    : block(name), be_(be), f_(be, name + ".f", f, seed) {}

activation coupling_block::forward(const activation& x, pass mode, tape* t) {
  expect_streams(*this, x, true, "input");
  const tensor fx = f_.forward(x.x1, mode, t);
  return {be_.add(x.x2, fx), x.x1};
}

activation coupling_block::backward(tape& t, const activation& dy) {
  tensor dx1 = f_.backward(t, dy.x1);  // J_F(x1)ᵀ dy1, fresh
  be_.add_inplace(dx1, dy.x2);
  return {dx1, dy.x1};
}

activation coupling_block::inverse(const activation& y) {
  expect_streams(*this, y, true, "output");
  const tensor fy2 = f_.forward(y.x2, pass::recompute, nullptr);
  return {y.x2, be_.sub(y.x1, fy2)};
}

activation coupling_block::rebuild_input(backend& on, const activation& y, tape& t) {
  expect_streams(*this, y, true, "output");
  const tensor f = f_.forward_on(on, y.x2, pass::recompute, &t);  // F(x1) with x1 = y2, graph kept
  return {y.x2, on.sub(y.x1, f)};
}

std::pair<activation, activation> coupling_block::backward_from_output(const activation& y,
                                                                       const activation& dy) {
  expect_streams(*this, y, true, "output");
  expect_streams(*this, dy, true, "output gradient");
  tape t;
  const activation x = rebuild_input(be_, y, t);
  return {x, backward(t, dy)};
}

std::vector<parameter*> coupling_block::parameters() {
  std::vector<parameter*> out;
  f_.collect(out);
  return out;
}

std::vector<buffer_ref> coupling_block::buffers() {
  std::vector<buffer_ref> out;
  f_.collect_buffers(out);
  return out;
}

// ẏ1 = ẋ2 + J_F ẋ1 + ∂F/∂θ θ̇, ẏ2 = ẋ1.
std::pair<activation, activation> coupling_block::jvp_impl(const activation& x, const activation& x_dot,
                                                           pass mode, tape* t,
                                                           const parameter_tangents& theta_dot) {
  expect_streams(*this, x, true, "input");
  auto [fx, fx_dot] = f_.jvp(x.x1, x_dot.x1, mode, t, theta_dot);
  return {{be_.add(x.x2, fx), x.x1}, {add_tangents(be_, x_dot.x2, fx_dot), x_dot.x1}};
}

}  // namespace petra
