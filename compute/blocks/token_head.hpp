// Head of a reversible vision transformer: the two token streams (N, T, d) concatenated to 2d
// features per token → layer norm → mean over the tokens → linear → logits.
#pragma once

#include "compute/blocks/block.hpp"
#include "compute/layers/token_layers.hpp"

namespace petra {

class token_head_block : public block {
 public:
  token_head_block(backend& be, const std::string& name, int stream_width, int num_classes, uint64_t seed);

  std::string kind() const override { return "head"; }
  activation forward(const activation& x, pass mode, tape* t) override;
  activation backward(tape& t, const activation& dy) override;
  activation_shape output_shape(const activation_shape& x) const override;
  std::vector<parameter*> parameters() override;
  std::vector<buffer_ref> buffers() override { return {}; }

 private:
  std::pair<activation, activation> jvp_impl(const activation& x, const activation& x_dot, pass mode, tape* t,
                                             const parameter_tangents& theta_dot) override;
  void expect_tokens(const activation& x) const;
  /// Two (N, T, d) → (N, T, 2d): token by token, x1's features then x2's.
  tensor concat_features(const tensor& a, const tensor& b) const;

  backend& be_;
  int width_;
  layer_norm_layer norm_;  // over 2d
  token_linear fc_;
};

}  // namespace petra
