// A chain of conv → BN (→ ReLU) units.
#include "compute/layers/conv_chain.hpp"

namespace petra {

conv_chain::conv_chain(backend& be, const std::string& name, const std::vector<conv_unit_spec>& units,
                       uint64_t seed)
    : be_(be) {
  for (std::size_t i = 0; i < units.size(); ++i) {
    const conv_unit_spec& s = units[i];
    const std::string index = std::to_string(i + 1);
    units_.push_back(
        std::make_unique<unit>(unit{conv2d_layer(be, name + ".conv" + index, s.in_channels, s.out_channels,
                                                 s.kernel, s.stride, s.kernel / 2, seed),
                                    batch_norm_layer(be, name + ".bn" + index, s.out_channels), s.relu}));
  }
}

tensor conv_chain::forward_on(backend& on, const tensor& x, pass mode, tape* t) {
  tensor h = x;
  for (auto& u : units_) {
    h = u->conv.forward_on(on, h, t);
    h = u->bn.forward_on(on, h, mode, t);
    if (u->relu) h = relu_forward(on, h, t);
  }
  return h;
}

tensor conv_chain::backward(tape& t, const tensor& dy, bool need_dx) {
  tensor d = dy;
  for (std::size_t i = units_.size(); i-- > 0;) {
    unit& u = *units_[i];
    if (u.relu) d = relu_backward(be_, t, d);
    d = u.bn.backward(t, d);
    d = u.conv.backward(t, d, need_dx || i > 0);
  }
  return d;
}

void conv_chain::collect(std::vector<parameter*>& out) {
  for (auto& u : units_) {
    u->conv.collect(out);
    u->bn.collect(out);
  }
}

void conv_chain::collect_buffers(std::vector<buffer_ref>& out) {
  for (auto& u : units_) u->bn.collect_buffers(out);
}

shape_t conv_chain::output_shape(const shape_t& x) const {
  shape_t s = x;
  for (const auto& u : units_) s = u->conv.output_shape(s);
  return s;
}

std::vector<conv_unit_spec> conv_chain::basic(int channels) {
  return {{channels, channels, 3, 1, true}, {channels, channels, 3, 1, true}};
}

std::vector<conv_unit_spec> conv_chain::bottleneck(int in, int hidden, int out, int stride) {
  return {{in, hidden, 1, 1, true}, {hidden, hidden, 3, stride, true}, {hidden, out, 1, 1, true}};
}

}  // namespace petra
