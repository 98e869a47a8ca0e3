// Auxiliary head: forward, backward and forward mode.
#include "compute/blocks/aux_head.hpp"

#include "compute/forward/op_jvps.hpp"

namespace petra {

aux_head_block::aux_head_block(backend& be, const std::string& name, int stream_width, int aux_width,
                               int num_classes, uint64_t seed)
    : block(name),
      be_(be),
      conv_(be, name, {{2 * stream_width, aux_width, 3, 1, true}}, seed),
      fc_(be, name + ".fc", aux_width, num_classes, seed) {}

activation aux_head_block::forward(const activation& x, pass mode, tape* t) {
  expect_streams(*this, x, true, "input");
  const tensor h = conv_.forward(be_.concat_channels(x.x1, x.x2), mode, t);
  if (t) t->push(h);  // the pool's backward needs its shape only
  return {fc_.forward(be_.global_avg_pool_forward(h), t), tensor{}};
}

activation aux_head_block::backward(tape& t, const activation& dy) {
  const tensor dpooled = fc_.backward(t, dy.x1);
  const tensor dh = be_.global_avg_pool_backward(dpooled, t.pop().shape());
  auto halves = be_.split_channels(conv_.backward(t, dh));
  return {halves.first, halves.second};
}

std::pair<activation, activation> aux_head_block::jvp_impl(const activation& x, const activation& x_dot,
                                                           pass mode, tape* t,
                                                           const parameter_tangents& theta_dot) {
  expect_streams(*this, x, true, "input");
  const tensor cat_dot = concat_channels_tangent(be_, x_dot.x1, x.x1.shape(), x_dot.x2, x.x2.shape());
  auto [h, h_dot] = conv_.jvp(be_.concat_channels(x.x1, x.x2), cat_dot, mode, t, theta_dot);
  if (t) t->push(h);
  auto [logits, logits_dot] =
      fc_.jvp(be_.global_avg_pool_forward(h), global_avg_pool_tangent(be_, h_dot), t, theta_dot);
  return {{logits, tensor{}}, {logits_dot, tensor{}}};
}

activation_shape aux_head_block::output_shape(const activation_shape& x) const {
  return {{x.x1[0], fc_.out_features()}, {}};
}

std::vector<parameter*> aux_head_block::parameters() {
  std::vector<parameter*> out;
  conv_.collect(out);
  fc_.collect(out);
  return out;
}

std::vector<buffer_ref> aux_head_block::buffers() {
  std::vector<buffer_ref> out;
  conv_.collect_buffers(out);
  return out;
}

}  // namespace petra
