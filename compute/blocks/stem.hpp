// Stem (not reversible): conv → BN → ReLU [→ max-pool 2×2 s2], split into two streams.
//  cifar: conv3×3 s1 p1 (C_in → 2·w0); imagenet: conv7×7 s2 p3, BN, ReLU, max-pool.
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/conv_chain.hpp"

namespace petra {

class stem_block : public block {
 public:
  stem_block(backend& be, const std::string& name, int in_channels, int stream_width, bool imagenet,
             uint64_t seed);

  std::string kind() const override { return "stem"; }
  activation forward(const activation& x, pass mode, tape* t) override;
  /// The image gradient is computed only when asked (set_input_grad): nothing consumes it in training.
  activation backward(tape& t, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override;
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override;

  void set_input_grad(bool wanted) { input_grad_ = wanted; }

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  backend& be_;
  conv_chain conv_;
  bool imagenet_;
  bool input_grad_ = false;
};

}  // namespace petra
