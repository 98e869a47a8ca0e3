// Downsampling blocks (not reversible): width w → w', stride s.
//  basic:      a = BN(conv3×3 s(x1)); y1 = ReLU(BN(conv3×3(ReLU(a)))) + BN(conv1×1 s(x2)); y2 = ReLU(a)
//  bottleneck: y1 = F_s(x1) + BN(conv1×1 s(x2)); y2 = BN(conv1×1 s(x1)),
//              F_s = 1×1 (w→h) → BN → ReLU → 3×3 s (h→h) → BN → ReLU → 1×1 (h→w') → BN → ReLU
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/conv_chain.hpp"

namespace petra {

class downsample_basic_block : public block {
 public:
  downsample_basic_block(backend& be, const std::string& name, int in_width, int out_width, int stride,
                         uint64_t seed);

  std::string kind() const override { return "downsample"; }
  activation forward(const activation& x, pass mode, tape* t) override;
  activation backward(tape& t, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override;
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override;

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  backend& be_;
  conv_chain a_;     // conv3×3 s → BN → ReLU: y2
  conv_chain b_;     // conv3×3 → BN → ReLU
  conv_chain proj_;  // conv1×1 s → BN (on x2)
};

class downsample_bottleneck_block : public block {
 public:
  downsample_bottleneck_block(backend& be, const std::string& name, int in_width, int hidden, int out_width,
                              int stride, uint64_t seed);

  std::string kind() const override { return "downsample"; }
  activation forward(const activation& x, pass mode, tape* t) override;
  activation backward(tape& t, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override;
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override;

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  backend& be_;
  conv_chain f_;      // F_s on x1
  conv_chain proj2_;  // conv1×1 s → BN on x2, added to F_s(x1)
  conv_chain proj1_;  // conv1×1 s → BN on x1: y2
};

}  // namespace petra
