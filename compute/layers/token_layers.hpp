// Layers over tokens (N, T, C), initialised as ViTs are: layer norm (γ = 1, β = 0) and linear
// (weights truncated normal, std 0.02; biases zero). Each forward may run on a second stream of its
// device (an overlapped rebuild), its backward on the layer's own backend.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compute/backend.hpp"
#include "compute/forward/tangents.hpp"
#include "compute/parameter.hpp"
#include "compute/tape.hpp"

namespace petra {

class layer_norm_layer {
 public:
  layer_norm_layer(backend& be, const std::string& name, int features);

  /// y = γ·x̂ + β over each token's features. With a tape, pushes x, μ, inv_std.
  tensor forward_on(backend& on, const tensor& x, tape* t);
  tensor forward(const tensor& x, tape* t) { return forward_on(be_, x, t); }
  /// Pops what forward pushed; dγ += Σ dy·x̂, dβ += Σ dy; returns dx.
  tensor backward(tape& t, const tensor& dy);
  /// y as forward (and its tape), ẏ = J_x ẋ + γ̇·x̂ + β̇.
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, tape* t,
                                const parameter_tangents& theta_dot);

  void collect(std::vector<parameter*>& out) {
    out.push_back(&gamma_);
    out.push_back(&beta_);
  }

  static constexpr float eps = 1e-6f;  // ViT's (timm's) layer norm

 private:
  backend& be_;
  parameter gamma_;
  parameter beta_;
};

/// Linear over the last axis of x (…, I) → (…, O): the linear op on the rows of x.
class token_linear {
 public:
  token_linear(backend& be, const std::string& name, int in_features, int out_features, uint64_t seed);

  /// y = x·wᵀ + b per row. With a tape, pushes x.
  tensor forward_on(backend& on, const tensor& x, tape* t);
  tensor forward(const tensor& x, tape* t) { return forward_on(be_, x, t); }
  /// Pops x; dw += dyᵀ·x, db += Σ dy over the rows; returns dx.
  tensor backward(tape& t, const tensor& dy);
  /// y as forward (and its tape), ẏ = ẋ·wᵀ + x·ẇᵀ + ḃ.
  std::pair<tensor, tensor> jvp(const tensor& x, const tensor& x_dot, tape* t,
                                const parameter_tangents& theta_dot);

  void collect(std::vector<parameter*>& out) {
    out.push_back(&weight_);
    out.push_back(&bias_);
  }
  int out_features() const { return static_cast<int>(weight_.value.dim(0)); }

 private:
  backend& be_;
  parameter weight_;
  parameter bias_;
};

/// `x` (…, C) seen as rows (numel/C, C); an undefined tensor stays undefined.
tensor as_rows(const tensor& x);
/// Rows (R, C) seen as `like`'s leading shape with C last; R may be a multiple of like's rows (a
/// stacked tangent: the first axis grows).
tensor rows_like(const tensor& rows, const shape_t& like);

}  // namespace petra
