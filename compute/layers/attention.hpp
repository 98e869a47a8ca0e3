// The two residual functions of a reversible transformer block, over tokens (N, T, d):
//   attention: F(x) = out(MHSA(LN(x))), h heads of d/h features, scaled dot-product, with q, k, v
//              and output projections (biases included);
//   mlp:       G(x) = fc2(GELU(fc1(LN(x)))), d → r·d → d.
// The heads run as one batched matmul over the N·h (sample, head) pairs: item n·h + j holds sample
// n's head j only, so no sample attends to another.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compute/layers/token_layers.hpp"

namespace petra {

class attention_branch {
 public:
  attention_branch(backend& be, const std::string& name, int width, int heads, uint64_t seed);

  /// F(x) computed by `on` (the layer's backend or a second stream of its device). With a tape,
  /// keeps what backward needs.
  tensor forward_on(backend& on, const tensor& x, tape* t);
  /// J_F(x)ᵀ dy from the tape of a forward; parameter gradients accumulate.
  tensor backward(tape& t, const tensor& dy);
  /// (F(x), J_F ẋ + ∂F/∂θ θ̇), with the forward's tape.
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, tape* t,
                                const parameter_tangents& theta_dot);
  void collect(std::vector<parameter*>& out);

 private:
  /// (N, T, d) → (N·h, T, d/h); an undefined tangent stays undefined.
  tensor split_heads(backend& on, const tensor& x) const;
  /// (N·h, T, d/h) → (N, T, d).
  tensor merge_heads(backend& on, const tensor& x) const;

  backend& be_;
  int heads_;
  float scale_;  // 1/√(d/h)
  layer_norm_layer norm_;
  token_linear q_, k_, v_, out_;
};

class mlp_branch {
 public:
  mlp_branch(backend& be, const std::string& name, int width, int hidden, uint64_t seed);

  tensor forward_on(backend& on, const tensor& x, tape* t);
  tensor backward(tape& t, const tensor& dy);
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, tape* t,
                                const parameter_tangents& theta_dot);
  void collect(std::vector<parameter*>& out);

 private:
  backend& be_;
  layer_norm_layer norm_;
  token_linear fc1_, fc2_;
};

}  // namespace petra
