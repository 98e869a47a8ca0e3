// One stage's arithmetic of forward gradients (Fournier et al., ICML 2023): its auxiliary head
// trained by a local loss, the guesses, and the projection ĝ = (⟨∇L, G̃⟩/‖G̃‖²)·G̃ per sample.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compute/blocks/aux_head.hpp"
#include "compute/optimizer.hpp"

namespace petra {

/// ⟨a_n, b_n⟩ over both streams of each sample n: one value per sample.
std::vector<double> per_sample_dot(backend& be, const activation& a, const activation& b);

/// ĝ_n = (d_n / ‖G̃_n‖²)·G̃_n for every sample n of `guess` (a zero guess gives a zero ĝ_n).
activation project_on_guess(backend& be, const activation& guess, const std::vector<float>& d);

/// d_n = ⟨∇_{logits_n} L, ż_n⟩ per sample n for the mean loss L, from its gradient `dlogits` (what the
/// loss gives the last stage, (softmax − onehot)/N) and a logits tangent ż: the vector each stage's
/// derivatives message carries. Computed on the host in double, whatever made the tensors. A logits
/// tangent of m·N rows stacks m of them (compute/forward/stacked.hpp): m·N values, group by group.
std::vector<float> loss_derivatives(backend& be, const tensor& dlogits, const tensor& logits_dot);
/// The same split per tangent: one vector of N values per group of `logits_dot`'s m·N rows, in stack order.
std::vector<std::vector<float>> loss_derivatives_per_tangent(backend& be, const tensor& dlogits,
                                                             const tensor& logits_dot);

/// N(0, 1) noise of `like`'s shape, drawn from (seed, stage, micro-batch id) alone: the same guess
/// for the same micro-batch whatever runs it.
activation gaussian_guess(backend& be, const activation& like, uint64_t seed, int stage, int64_t id);

/// A stage's auxiliary head with its own optimizer (the stage's settings): each call trains it on
/// one micro-batch and gives the gradient of its loss at the stage's output.
class local_loss {
 public:
  /// On a stage output of two streams of `stream_width` channels.
  local_loss(backend& be, const std::string& name, int stream_width, int aux_width, int num_classes,
             const optimizer_settings& optimizer, uint64_t seed);

  struct result {
    float loss = 0.f;  // mean softmax cross-entropy of the head's logits
    activation grad;   // ∇_z ℓ of that mean loss (two streams)
  };
  /// Forward (batch statistics), loss, backward at `z`; the head's gradients accumulate and it steps
  /// after every k-th call.
  result step(const activation& z, const std::vector<int32_t>& labels);

  std::vector<parameter*> parameters() { return head_.parameters(); }
  std::vector<buffer_ref> buffers() { return head_.buffers(); }
  param_optimizer& optimizer() { return optimizer_; }

 private:
  backend& be_;
  aux_head_block head_;
  param_optimizer optimizer_;
  int calls_ = 0;
};

}  // namespace petra
