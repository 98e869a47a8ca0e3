// Stem block.
#include "compute/blocks/stem.hpp"

#include "compute/forward/op_jvps.hpp"

namespace petra {

stem_block::stem_block(backend& be, const std::string& name, int in_channels, int stream_width, bool imagenet,
                       uint64_t seed)
    : block(name),
      be_(be),
      conv_(be, name, {{in_channels, 2 * stream_width, imagenet ? 7 : 3, imagenet ? 2 : 1, true}}, seed),
      imagenet_(imagenet) {}

activation stem_block::forward(const activation& x, pass mode, tape* t) {
  expect_streams(*this, x, false, "input");
  tensor h = conv_.forward(x.x1, mode, t);
  if (imagenet_) {
    if (t) t->push(h);
    h = be_.max_pool2x2_forward(h);
  }
  auto halves = be_.split_channels(h);
  return {halves.first, halves.second};
}

activation stem_block::backward(tape& t, const activation& dy) {
  tensor d = be_.concat_channels(dy.x1, dy.x2);
  if (imagenet_) d = be_.max_pool2x2_backward(t.pop(), d);
  return {conv_.backward(t, d, input_grad_), tensor{}};
}

activation_shape stem_block::output_shape(const activation_shape& x) const {
  shape_t s = conv_.output_shape(x.x1);
  if (imagenet_) s = {s[0], s[1], s[2] / 2, s[3] / 2};
  s[1] /= 2;
  return {s, s};
}

std::vector<parameter*> stem_block::parameters() {
  std::vector<parameter*> out;
  conv_.collect(out);
  return out;
}

std::vector<buffer_ref> stem_block::buffers() {
  std::vector<buffer_ref> out;
  conv_.collect_buffers(out);
  return out;
}

std::pair<activation, activation> stem_block::jvp_impl(const activation& x, const activation& x_dot,
                                                       pass mode, tape* t,
                                                       const parameter_tangents& theta_dot) {
  expect_streams(*this, x, false, "input");
  auto [h, h_dot] = conv_.jvp(x.x1, x_dot.x1, mode, t, theta_dot);
  if (imagenet_) {
    if (t) t->push(h);
    h_dot = max_pool2x2_tangent(be_, h, h_dot);  // at the unpooled h, as the forward's argmax
    h = be_.max_pool2x2_forward(h);
  }
  auto halves = be_.split_channels(h);
  auto tangents = split_channels_tangent(be_, h_dot);
  return {{halves.first, halves.second}, {tangents.first, tangents.second}};
}

}  // namespace petra
