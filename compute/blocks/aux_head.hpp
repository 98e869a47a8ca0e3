// Auxiliary head: a stage's local classifier for forward gradients guided by local losses.
// concat(x1, x2) → conv3×3 (2w → a) → BN → ReLU → global average pool → linear (a → classes).
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/conv_chain.hpp"
#include "compute/layers/linear.hpp"

namespace petra {

class aux_head_block : public block {
 public:
  /// On a stage output of two streams of `stream_width` channels; `aux_width` channels inside.
  aux_head_block(backend& be, const std::string& name, int stream_width, int aux_width, int num_classes,
                 uint64_t seed);

  std::string kind() const override { return "aux_head"; }
  activation forward(const activation& x, pass mode, tape* t) override;
  activation backward(tape& t, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override;
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override;

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;

  backend& be_;
  conv_chain conv_;  // conv3×3 → BN → ReLU
  linear_layer fc_;
};

}  // namespace petra
