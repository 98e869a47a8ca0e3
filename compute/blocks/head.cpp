// Head block. Pooling each stream first, then concatenating the (N, C) vectors, equals
// pooling the concatenation and moves H·W times fewer bytes.
#include "compute/blocks/head.hpp"

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

}  // namespace petra
