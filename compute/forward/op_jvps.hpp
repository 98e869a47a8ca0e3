// Forward mode of the backend's ops: the tangent ẏ of each op's output along the tangents of its
// inputs, composed from backend ops so that every backend has it. An undefined tangent is zero,
// both ways: an op whose input tangents are all zero returns an undefined ẏ, and nothing is spent.
// An input tangent may stack m tangents of the primal along the batch (m·N samples, group g the
// g-th tangent: compute/forward/stacked.hpp); ẏ then stacks the m output tangents in that order,
// each as if computed alone. A parameter tangent θ̇ belongs to every group (its term is repeated).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "compute/backend.hpp"

namespace petra {

/// ẏ = ẋ ⋆ w + x ⋆ ẇ + ḃ (convolution is bilinear in x and w).
tensor conv2d_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& w, const tensor& w_dot,
                      const tensor& b_dot, conv2d_params p);

/// ẏ = ẋ·wᵀ + x·ẇᵀ + ḃ.
tensor linear_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& w, const tensor& w_dot,
                      const tensor& b_dot);

/// Batch norm with batch statistics (`saved`, of the forward at x), whose tangent includes those
/// of μ_B and σ_B: ẏ = J_x ẋ + γ̇·x̂ + β̇. J_x is symmetric per channel,
/// γ·inv_std·(I − 11ᵀ/m − x̂x̂ᵀ/m), so J_x ẋ is the backward applied to ẋ.
tensor batch_norm_train_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                                const tensor& gamma_dot, const tensor& beta_dot,
                                const batch_norm_saved& saved, float eps);

/// Batch norm with running statistics (affine in x, γ and β):
/// ẏ = γ·ẋ/sqrt(var + eps) + γ̇·(x − mean)/sqrt(var + eps) + β̇.
tensor batch_norm_eval_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                               const tensor& gamma_dot, const tensor& beta_dot, const tensor& running_mean,
                               const tensor& running_var, float eps);

/// ẏ = ẋ·[y > 0] (y the ReLU's output).
tensor relu_tangent(backend& be, const tensor& y, const tensor& x_dot);
/// ẏ = ẋ at each 2×2 window's first maximum of x.
tensor max_pool2x2_tangent(backend& be, const tensor& x, const tensor& x_dot);
/// ẏ = the mean of ẋ over H·W.
tensor global_avg_pool_tangent(backend& be, const tensor& x_dot);

/// Layer norm over each token's features (`saved` of the forward at x), statistics' tangents
/// included: ẏ = J_x ẋ + γ̇·x̂ + β̇, J_x ẋ = γ·inv_std·(ẋ − mean(ẋ) − x̂·mean(ẋ·x̂)) per token.
tensor layer_norm_tangent(backend& be, const tensor& x, const tensor& x_dot, const tensor& gamma,
                          const tensor& gamma_dot, const tensor& beta_dot, const layer_norm_saved& saved,
                          float eps);
/// ẏ = (Φ(x) + x·φ(x))·ẋ, the exact GELU's derivative.
tensor gelu_tangent(backend& be, const tensor& x, const tensor& x_dot);
/// ẏ = y·(ẋ − Σ_last ẋ·y) (y the softmax's output; its Jacobian is symmetric, so this is its backward
/// applied to ẋ).
tensor softmax_tangent(backend& be, const tensor& y, const tensor& x_dot);
/// ċ = op(ȧ)·op(b) + op(a)·op(ḃ) item by item (the product is bilinear); either tangent may be zero.
tensor batched_matmul_tangent(backend& be, const tensor& a, const tensor& a_dot, const tensor& b,
                              const tensor& b_dot, bool transpose_a, bool transpose_b);
/// ẏ = the mean of ẋ over the tokens.
tensor token_mean_tangent(backend& be, const tensor& x_dot);

/// ȧ + ḃ and ȧ − ḃ (either may be zero).
tensor add_tangents(backend& be, const tensor& a_dot, const tensor& b_dot);
tensor sub_tangents(backend& be, const tensor& a_dot, const tensor& b_dot);
/// The halves of ẋ (both zero when ẋ is).
std::pair<tensor, tensor> split_channels_tangent(backend& be, const tensor& x_dot);
/// concat(ȧ, ḃ); a zero half is filled with zeros of `b_shape` or `a_shape`.
tensor concat_channels_tangent(backend& be, const tensor& a_dot, const shape_t& a_shape, const tensor& b_dot,
                               const shape_t& b_shape);

/// The softmax cross-entropy at logits z (N,K) and its directional derivative along ż.
struct loss_jvp {
  float loss = 0.f;  // the mean over the batch, ℓ = (1/N) Σ_n ℓ_n, ℓ_n = logsumexp(z_n) − z_n[label_n]
  int64_t correct = 0;             // argmax hits
  std::vector<double> per_sample;  // ℓ̇_n = ⟨softmax(z_n) − onehot(label_n), ż_n⟩, one per sample
                                   // (m·N of them, group by group, for m stacked tangents)
  /// ℓ̇ = (1/N) Σ_n ℓ̇_n, the derivative of the mean loss (the mean of the m groups' when stacked).
  double mean() const;
};
/// ℓ and ℓ̇ per sample; the dot products run on the host, in double (N·K values: logits are small).
loss_jvp softmax_cross_entropy_jvp(backend& be, const tensor& logits, const tensor& logits_dot,
                                   const std::vector<int32_t>& labels);

}  // namespace petra
