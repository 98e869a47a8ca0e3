// Head block. Pooling each stream first, then concatenating the (N, C) vectors, equals
// pooling the concatenation and moves H·W times fewer bytes.
#include "compute/blocks/head.hpp"

#include "compute/forward/op_jvps.hpp"

namespace petra {

head_block::head_block(backend& be, const std::string& name, int stream_width, int num_classes, uint64_t seed)
    : block(name), be_(be), fc_(be, name + ".fc", 2 * stream_width, num_classes, seed) {}

activation head_block::forward(const activation& x, pass, tape* t) {
  expect_streams(*this, x, true, "input");
  const int64_t n = x.x1.dim(0), c = x.x1.dim(1);
  if (t) {
    t->push(x.x1);  // only the shapes are needed by the backward
  }
  const tensor p1 = be_.global_avg_pool_forward(x.x1).reshaped({n, c, 1, 1});
  const tensor p2 = be_.global_avg_pool_forward(x.x2).reshaped({n, c, 1, 1});
  const tensor pooled = be_.concat_channels(p1, p2).reshaped({n, 2 * c});
  return {fc_.forward(pooled, t), tensor{}};
}

activation head_block::backward(tape& t, const activation& dy) {
  const tensor dpooled = fc_.backward(t, dy.x1);
  const shape_t x_shape = t.pop().shape();
  const int64_t n = x_shape[0], c = x_shape[1];
  auto halves = be_.split_channels(dpooled.reshaped({n, 2 * c, 1, 1}));
  return {be_.global_avg_pool_backward(halves.first.reshaped({n, c}), x_shape),
          be_.global_avg_pool_backward(halves.second.reshaped({n, c}), x_shape)};
}

activation_shape head_block::output_shape(const activation_shape& x) const {
  return {{x.x1[0], fc_.out_features()}, {}};
}

std::vector<parameter*> head_block::parameters() {
  std::vector<parameter*> out;
  fc_.collect(out);
  return out;
}

std::pair<activation, activation> head_block::jvp_impl(const activation& x, const activation& x_dot, pass,
                                                       tape* t, const parameter_tangents& theta_dot) {
  expect_streams(*this, x, true, "input");
  const int64_t n = x.x1.dim(0), c = x.x1.dim(1);
  if (t) t->push(x.x1);                    // as forward: the backward needs the shape only
  auto pool = [&](const tensor& stream) {  // a stacked tangent keeps its m·n samples
    return stream.defined() ? be_.global_avg_pool_forward(stream).reshaped({stream.dim(0), c, 1, 1})
                            : tensor{};
  };
  const tensor pooled = be_.concat_channels(pool(x.x1), pool(x.x2)).reshaped({n, 2 * c});
  tensor pooled_dot =
      concat_channels_tangent(be_, pool(x_dot.x1), {n, c, 1, 1}, pool(x_dot.x2), {n, c, 1, 1});
  if (pooled_dot.defined()) pooled_dot = pooled_dot.reshaped({pooled_dot.dim(0), 2 * c});
  auto [logits, logits_dot] = fc_.jvp(pooled, pooled_dot, t, theta_dot);
  return {{logits, tensor{}}, {logits_dot, tensor{}}};
}

}  // namespace petra
