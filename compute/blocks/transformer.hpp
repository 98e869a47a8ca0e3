// Reversible transformer block (RevViT, Mangalam et al. 2022) on two token streams (N, T, d):
//   y1 = x1 + F(x2), y2 = x2 + G(y1), F = LN → multi-head self-attention, G = LN → MLP (GELU);
//   inverse: x2 = y2 − G(y1), x1 = y1 − F(x2), from the current weights.
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/attention.hpp"

namespace petra {

class transformer_block : public block {
 public:
  /// `width` d, `heads` h (d divisible by h), MLP hidden width `hidden` (mlp_ratio·d).
  transformer_block(backend& be, const std::string& name, int width, int heads, int hidden, uint64_t seed);

  std::string kind() const override { return "transformer"; }
  bool reversible() const override { return true; }
  activation forward(const activation& x, pass mode, tape* t) override;
  /// dy1' = dy1 + J_G(y1)ᵀ dy2; dx1 = dy1', dx2 = dy2 + J_F(x2)ᵀ dy1'.
  activation backward(tape& t, const activation& dy) override;
  activation inverse(const activation& y) override;
  /// x2 = y2 − G(y1), x1 = y1 − F(x2), with both graphs kept on `t` in the forward's order.
  activation rebuild_input(backend& on, const activation& y, tape& t) override;
  std::pair<activation, activation> backward_from_output(const activation& y, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override { return x; }
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override { return {}; }

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  /// Both streams (N, T, d) of this block's width.
  void expect_tokens(const activation& x, const char* what) const;

  backend& be_;
  int width_;
  attention_branch f_;
  mlp_branch g_;
};

}  // namespace petra
