// Downsampling blocks, basic and bottleneck.
#include "compute/blocks/downsample.hpp"

#include "compute/forward/op_jvps.hpp"

namespace petra {

downsample_basic_block::downsample_basic_block(backend& be, const std::string& name, int in_width,
                                               int out_width, int stride, uint64_t seed)
    : block(name),
      be_(be),
      a_(be, name + ".a", {{in_width, out_width, 3, stride, true}}, seed),
      b_(be, name + ".b", {{out_width, out_width, 3, 1, true}}, seed),
      proj_(be, name + ".proj", {{in_width, out_width, 1, stride, false}}, seed) {}

activation downsample_basic_block::forward(const activation& x, pass mode, tape* t) {
  expect_streams(*this, x, true, "input");
  const tensor r = a_.forward(x.x1, mode, t);
  const tensor b = b_.forward(r, mode, t);  // on the tape: never written
  const tensor c = proj_.forward(x.x2, mode, t);
  return {be_.add(b, c), r};
}

activation downsample_basic_block::backward(tape& t, const activation& dy) {
  // Pops in reverse order of forward: proj, b, a.
  tensor dx2 = proj_.backward(t, dy.x1);
  tensor dr = b_.backward(t, dy.x1);
  be_.add_inplace(dr, dy.x2);
  tensor dx1 = a_.backward(t, dr);
  return {dx1, dx2};
}

activation_shape downsample_basic_block::output_shape(const activation_shape& x) const {
  const shape_t s = a_.output_shape(x.x1);
  return {s, s};
}

std::vector<parameter*> downsample_basic_block::parameters() {
  std::vector<parameter*> out;
  a_.collect(out);
  b_.collect(out);
  proj_.collect(out);
  return out;
}

std::vector<buffer_ref> downsample_basic_block::buffers() {
  std::vector<buffer_ref> out;
  a_.collect_buffers(out);
  b_.collect_buffers(out);
  proj_.collect_buffers(out);
  return out;
}

downsample_bottleneck_block::downsample_bottleneck_block(backend& be, const std::string& name, int in_width,
                                                         int hidden, int out_width, int stride, uint64_t seed)
    : block(name),
      be_(be),
      f_(be, name + ".f", conv_chain::bottleneck(in_width, hidden, out_width, stride), seed),
      proj2_(be, name + ".proj2", {{in_width, out_width, 1, stride, false}}, seed),
      proj1_(be, name + ".proj1", {{in_width, out_width, 1, stride, false}}, seed) {}

activation downsample_bottleneck_block::forward(const activation& x, pass mode, tape* t) {
  expect_streams(*this, x, true, "input");
  const tensor f = f_.forward(x.x1, mode, t);  // on the tape: never written
  const tensor y1 = be_.add(f, proj2_.forward(x.x2, mode, t));
  return {y1, proj1_.forward(x.x1, mode, t)};
}

activation downsample_bottleneck_block::backward(tape& t, const activation& dy) {
  tensor dx1 = proj1_.backward(t, dy.x2);
  tensor dx2 = proj2_.backward(t, dy.x1);
  be_.add_inplace(dx1, f_.backward(t, dy.x1));
  return {dx1, dx2};
}

activation_shape downsample_bottleneck_block::output_shape(const activation_shape& x) const {
  const shape_t s = f_.output_shape(x.x1);
  return {s, s};
}

std::vector<parameter*> downsample_bottleneck_block::parameters() {
  std::vector<parameter*> out;
  f_.collect(out);
  proj2_.collect(out);
  proj1_.collect(out);
  return out;
}

std::vector<buffer_ref> downsample_bottleneck_block::buffers() {
  std::vector<buffer_ref> out;
  f_.collect_buffers(out);
  proj2_.collect_buffers(out);
  proj1_.collect_buffers(out);
  return out;
}

std::pair<activation, activation> downsample_basic_block::jvp_impl(const activation& x,
                                                                   const activation& x_dot, pass mode,
                                                                   tape* t,
                                                                   const parameter_tangents& theta_dot) {
  expect_streams(*this, x, true, "input");
  auto [r, r_dot] = a_.jvp(x.x1, x_dot.x1, mode, t, theta_dot);
  auto [b, b_dot] = b_.jvp(r, r_dot, mode, t, theta_dot);
  auto [c, c_dot] = proj_.jvp(x.x2, x_dot.x2, mode, t, theta_dot);
  return {{be_.add(b, c), r}, {add_tangents(be_, b_dot, c_dot), r_dot}};
}

std::pair<activation, activation> downsample_bottleneck_block::jvp_impl(const activation& x,
                                                                        const activation& x_dot, pass mode,
                                                                        tape* t,
                                                                        const parameter_tangents& theta_dot) {
  expect_streams(*this, x, true, "input");
  auto [f, f_dot] = f_.jvp(x.x1, x_dot.x1, mode, t, theta_dot);  // the forward's order: f, proj2, proj1
  auto [p2, p2_dot] = proj2_.jvp(x.x2, x_dot.x2, mode, t, theta_dot);
  const tensor y1 = be_.add(f, p2);
  auto [y2, y2_dot] = proj1_.jvp(x.x1, x_dot.x1, mode, t, theta_dot);
  return {{y1, y2}, {add_tangents(be_, f_dot, p2_dot), y2_dot}};
}

}  // namespace petra
