// Token head. Concatenating the features of each token is concat_channels on the (N·T, d, 1, 1)
// views; its backward, split_channels on the same views.
#include "compute/blocks/token_head.hpp"

#include <stdexcept>

#include "compute/forward/op_jvps.hpp"

namespace petra {

token_head_block::token_head_block(backend& be, const std::string& name, int stream_width, int num_classes,
                                   uint64_t seed)
    : block(name),
      be_(be),
      width_(stream_width),
      norm_(be, name + ".norm", 2 * stream_width),
      fc_(be, name + ".fc", 2 * stream_width, num_classes, seed) {}

void token_head_block::expect_tokens(const activation& x) const {
  expect_streams(*this, x, true, "input");
  for (const tensor* s : {&x.x1, &x.x2})
    if (s->rank() != 3 || s->dim(2) != width_ || s->shape() != x.x1.shape())
      throw std::invalid_argument(name() + " (head): input streams must both be tokens (N, T, " +
                                  std::to_string(width_) + "), got " + x.x1.shape_str() + " and " +
                                  x.x2.shape_str());
}

tensor token_head_block::concat_features(const tensor& a, const tensor& b) const {
  const int64_t n = a.dim(0), t = a.dim(1);
  return be_.concat_channels(a.reshaped({n * t, width_, 1, 1}), b.reshaped({n * t, width_, 1, 1}))
      .reshaped({n, t, 2 * width_});
}

activation token_head_block::forward(const activation& x, pass, tape* t) {
  expect_tokens(x);
  const tensor h = norm_.forward(concat_features(x.x1, x.x2), t);
  if (t) t->push(h);  // only its shape is needed by the backward
  return {fc_.forward(be_.token_mean_forward(h), t), tensor{}};
}

activation token_head_block::backward(tape& t, const activation& dy) {
  const tensor dpooled = fc_.backward(t, dy.x1);
  const shape_t h_shape = t.pop().shape();
  const tensor dh = norm_.backward(t, be_.token_mean_backward(dpooled, h_shape));
  const int64_t n = h_shape[0], tokens = h_shape[1];
  auto halves = be_.split_channels(dh.reshaped({n * tokens, 2 * width_, 1, 1}));
  return {halves.first.reshaped({n, tokens, width_}), halves.second.reshaped({n, tokens, width_})};
}

activation_shape token_head_block::output_shape(const activation_shape& x) const {
  return {{x.x1.at(0), fc_.out_features()}, {}};
}

std::vector<parameter*> token_head_block::parameters() {
  std::vector<parameter*> out;
  norm_.collect(out);
  fc_.collect(out);
  return out;
}

std::pair<activation, activation> token_head_block::jvp_impl(const activation& x, const activation& x_dot,
                                                             pass, tape* t,
                                                             const parameter_tangents& theta_dot) {
  expect_tokens(x);
  const int64_t tokens = x.x1.dim(1);
  auto as_map = [&](const tensor& s) {  // a stacked tangent keeps its m·N samples
    return s.defined() ? s.reshaped({s.dim(0) * tokens, width_, 1, 1}) : tensor{};
  };
  const shape_t half{x.x1.dim(0) * tokens, width_, 1, 1};
  tensor cat_dot = concat_channels_tangent(be_, as_map(x_dot.x1), half, as_map(x_dot.x2), half);
  if (cat_dot.defined()) cat_dot = cat_dot.reshaped({cat_dot.dim(0) / tokens, tokens, 2 * width_});
  const auto [h, h_dot] = norm_.jvp(concat_features(x.x1, x.x2), cat_dot, t, theta_dot);
  if (t) t->push(h);
  const auto [logits, logits_dot] =
      fc_.jvp(be_.token_mean_forward(h), token_mean_tangent(be_, h_dot), t, theta_dot);
  return {{logits, tensor{}}, {logits_dot, tensor{}}};
}

}  // namespace petra
