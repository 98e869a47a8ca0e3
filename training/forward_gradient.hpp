// Forward gradients guided by local losses (Fournier et al., ICML 2023) on docs/design.md §1's ticks:
// the per-stage work the simulator runs for training.method forward_gradient.
//
// Schedule. Stage j's forward at tick t computes z_j, its auxiliary head's loss ℓ_j (trained there),
// and its guess G̃_j; the tangents of every earlier stage ride forward with the activation, each later
// stage carrying them through itself by forward mode in one JVP, its k − 1 tangents stacked along the
// batch (compute/forward/stacked.hpp: one primal, one call per convolution for all of them; batch
// norm's tangent, which depends on its own batch's statistics, goes per group). The
// last stage J, at tick t + (J − j), computes its loss and, per tangent, the per-sample derivatives
// d_n = ⟨∇_{z_j} L, G̃_j⟩ (L the micro-batch's mean loss), and sends each stage its vector of B floats,
// the only upstream message (the loss computes them from its gradient of the logits and the logits'
// tangents the last stage sends beside them); it arrives the next tick, so stage j's backward runs at t + (J
// − j) + 1 (delay J − j + 1 ticks 1-based as in docs/design.md, against PETRA's 2(J − j)). Stage J runs
// its backward with the true gradient in the tick of its forward (delay 0). With target local nothing travels
// back: ĝ_j is formed from ℓ_j alone and stage j's backward follows its forward in the same tick (greedy
// local learning). Stage j then backpropagates ĝ_j = (d_n/‖G̃_n‖²)·G̃_n through itself only, from the input it
// kept (the output is not sent back to be inverted, and a kept input is exact), with the weights it has then,
// like the DSP-like `delayed` baseline.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "compute/pipeline/fg_stage.hpp"
#include "compute/pipeline/stage.hpp"
#include "training/forward_gradient_stage.hpp"
#include "training/method.hpp"

namespace petra {

/// A diagnostic: the cosine similarity between stage j's estimates ĝ_j and the true ∇_{z_j} L on the
/// sampled micro-batches (that gradient computed on the side by a true backward).
struct gradient_cosine {
  int64_t samples = 0;
  double sum = 0;  // Σ cos(ĝ_j, ∇_{z_j} L)
  double min = 1;
};

/// What forward gradients send between stages, counted by the sender.
struct forward_gradient_traffic {
  int64_t upstream_messages = 0;  // vectors of directional derivatives, one per stage j < J per micro-batch
  int64_t upstream_bytes = 0;     // their payload: B floats each
  int64_t tangent_bytes = 0;      // tangents sent downstream beside the activations
};

class forward_gradient {
 public:
  /// Over `stages` in order, each on its own backend; auxiliary heads on stages j < J when the method
  /// needs them (`num_classes` outputs, the stages' optimizer settings); `input` is the shape of
  /// stage 1's input (for the heads' widths); `seed` (training.seed) seeds the heads and the noise.
  /// On 1 in `cosine_every` micro-batches (runtime.inversion_sample_every; 0 = never) the true
  /// gradient at every stage output is computed on the side, with the weights of the tick the
  /// micro-batch enters, and compared with the estimates.
  forward_gradient(std::vector<stage*> stages, const forward_gradient_options& options, int num_classes,
                   const optimizer_settings& optimizer, uint64_t seed, const activation_shape& input,
                   int cosine_every = 0);

  /// Stage j's training forward of micro-batch `id` at `tick` (the stage's own forward, the tangents
  /// it received carried through it, its own guess added); returns the stage's output. At the last
  /// stage the tangents become the logits' and wait for the loss (loss_derivatives).
  activation forward(std::size_t j, const activation& x, int64_t id, int64_t tick,
                     const std::vector<int32_t>& labels);
  /// The loss of micro-batch `id` gave `dlogits` on backend `loss` (as the loss actor does): each
  /// stage's directional derivatives, sent home; they arrive the next tick.
  void loss_derivatives(int64_t id, const tensor& dlogits, backend& loss);
  /// Stage j < J's backward due at `tick`, if its derivatives are there: returns its micro-batch, or -1.
  int64_t backward(std::size_t j, int64_t tick);
  /// The tick is over: what was sent in it arrives.
  void end_tick();
  /// A stage finished the backward of micro-batch `id`: true when it was the last stage to (with a
  /// local target stage 1 finishes first, so a micro-batch is done only when every stage is).
  bool backward_done(int64_t id);

  const forward_gradient_traffic& traffic() const { return traffic_; }
  /// Stage j's cosine record since the last take; starts a new one.
  gradient_cosine take_cosine(std::size_t j);
  /// The most bytes of guesses (or ĝ_j) stage j has held at once, awaiting their derivatives.
  std::size_t guess_peak_bytes(std::size_t j) const { return stages_[j]->guess_peak_bytes(); }
  /// Stage j's auxiliary head (nullptr for the last stage, or when the method needs none).
  local_loss* aux_head(std::size_t j) { return stages_[j]->aux_head(); }
  /// Stage j's share (its auxiliary head's state goes with the stage's in checkpoints).
  forward_gradient_stage& stage_part(std::size_t j) { return *stages_[j]; }

  /// Tests: replaces stage j's guess for micro-batch `id` at its output `z`.
  std::function<activation(std::size_t j, int64_t id, const activation& z)> guess_for;
  /// Told of each estimate ĝ_j before stage j backpropagates it.
  std::function<void(std::size_t j, int64_t id, const activation& estimate)> on_estimate;

 private:
  struct derivatives {
    int64_t id;
    std::vector<float> per_sample;  // d_n; empty with a local target (the kept guess is ĝ_j already)
  };

  /// ∇_{z_j} L at every stage output j < J: a taped forward and a backward through every stage with
  /// its weights now; the parameter gradients they accumulate are put back as they were.
  std::vector<activation> true_gradients(const activation& images, const std::vector<int32_t>& labels);

  std::vector<stage*> compute_;
  std::vector<std::unique_ptr<forward_gradient_stage>> stages_;
  int cosine_every_;
  struct sampled {
    std::vector<activation> grads;  // ∇_{z_j} L per stage j < J
    std::size_t unused;             // the stages whose estimate has yet to be compared
  };
  std::map<int64_t, sampled> truth_;  // by micro-batch
  std::vector<gradient_cosine> cosine_;
  std::vector<std::vector<stage_tangent>> tangents_in_, tangents_next_;
  std::vector<stage_tangent> at_loss_;  // the logits' tangents of the micro-batch at the loss
  std::vector<std::optional<derivatives>> ready_, arriving_;
  std::map<int64_t, std::size_t> backwards_;  // by micro-batch: the stages that ran its backward
  forward_gradient_traffic traffic_;
};

}  // namespace petra
