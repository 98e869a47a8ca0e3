// Patch stem of a vision transformer (not reversible): a p×p convolution of stride p (C_in → d),
// its (N, d, H/p, W/p) map read as T = (H/p)·(W/p) tokens (N, T, d) in row-major patch order, plus
// a learned position embedding (T, d), then duplicated into the two streams. No class token
// (RevViT pools the tokens in its head).
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/conv2d.hpp"

namespace petra {

class patch_stem_block : public block {
 public:
  /// Images (N, in_channels, height, width), both divisible by `patch`; `width` d features per token.
  patch_stem_block(backend& be, const std::string& name, int in_channels, int height, int width, int patch,
                   int features, uint64_t seed);

  std::string kind() const override { return "stem"; }
  activation forward(const activation& x, pass mode, tape* t) override;
  /// The image gradient is computed only when asked (set_input_grad): nothing consumes it in training.
  activation backward(tape& t, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override;
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override { return {}; }

  void set_input_grad(bool wanted) { input_grad_ = wanted; }

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  void expect_images(const activation& x) const;
  /// (N, d, P, Q) → (N, T, d), and back.
  tensor to_tokens(const tensor& map) const;
  tensor to_map(const tensor& tokens) const;
  /// The two streams: the tokens and a copy of them.
  activation duplicated(const tensor& tokens);

  backend& be_;
  int in_channels_, height_, width_, grid_h_, grid_w_, features_;
  conv2d_layer patch_;
  parameter position_;  // (T, d)
  bool input_grad_ = false;
};

}  // namespace petra
