// One stage's share of forward gradients (the schedule is training/forward_gradient.hpp's): its
// forward with the tangents it carries and its own guess, the guesses it holds until their
// derivatives come back, the backward of its estimate ĝ_j, and its auxiliary head's state. The
// simulator and the stage actors run this same object, so both compute the same bits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "compute/pipeline/fg_stage.hpp"
#include "compute/pipeline/stage.hpp"
#include "compute/pipeline/stage_state.hpp"
#include "compute/pipeline/stage_tangent.hpp"
#include "training/method.hpp"

namespace petra {

class forward_gradient_stage {
 public:
  /// Stage `s` of `count` stages; `input` is the shape of its input (any batch) for the width of its
  /// auxiliary head, which stages before the last get when the method needs one (`num_classes`
  /// outputs, `optimizer` as the stage's, `seed` = training.seed).
  forward_gradient_stage(stage& s, std::size_t count, const forward_gradient_options& options,
                         int num_classes, const optimizer_settings& optimizer, uint64_t seed,
                         const activation_shape& input);

  struct forward_result {
    activation z;                         // the stage's output
    std::vector<stage_tangent> tangents;  // what goes on beside z (the last stage: the logits' tangents)
  };
  /// The training forward of micro-batch `id` at `tick`: z = F_j(x) and every received tangent
  /// carried through the stage in the same pass, by forward mode, all of them stacked along the batch
  /// (each tangent's batch statistics those of the forward, running ones updated once);
  /// before the last stage also the auxiliary head's step on z and the stage's guess G̃_j, kept for
  /// its backward and, with a global target, sent on as one more tangent. `guess_for` (tests)
  /// replaces the guess.
  forward_result forward(const activation& x, int64_t id, int64_t tick, const std::vector<int32_t>& labels,
                         const std::vector<stage_tangent>& received,
                         const std::function<activation(const activation& z)>& guess_for = {});

  /// Whether ĝ_j needs derivatives from the loss (a global target before the last stage); else it
  /// is ready at the forward and the backward follows in the same tick.
  bool awaits_derivatives() const { return !last_ && options_.target == target_kind::global; }
  /// Greedy local learning (target: local): nothing comes back from downstream.
  bool local_target() const { return options_.target == target_kind::local; }
  /// The micro-batch whose derivatives the schedule brings at `tick` (its forward was J − j ticks
  /// earlier, plus `link_delay` ticks injected on their way: faults.forward_delay on the links to the
  /// loss and faults.backward_delay on the way back), or -1.
  int64_t due_at(int64_t tick, int64_t link_delay = 0) const;

  struct backward_result {
    stage::backward_result step;  // the stage's own
    activation estimate;          // ĝ_j
  };
  /// The backward of micro-batch `id` at `tick`: ĝ_j = (d_n / ‖G̃_n‖²)·G̃_n per sample (`d` empty:
  /// the kept guess is ĝ_j already) backpropagated through the stage from its kept input.
  backward_result backward(int64_t id, const std::vector<float>& d, int64_t tick);

  /// The auxiliary head (nullptr on the last stage, or when the method needs none).
  local_loss* aux_head() { return aux_.get(); }
  /// The most bytes of guesses (or ĝ_j) held at once, awaiting their derivatives.
  std::size_t guess_peak_bytes() const { return guess_peak_bytes_; }
  /// Guesses held now (each waits for its micro-batch's derivatives).
  std::size_t held() const { return held_.size(); }

  /// The auxiliary head's weights, momentum and BN statistics appended to the stage's snapshot
  /// (aux/param/<name>, aux/momentum/<name>, aux/buffer/<name>)...
  void save(stage_snapshot& into);
  /// ...and restored from one (a missing tensor throws naming it). The head steps once every k
  /// forwards as its stage every k backwards, so at a snapshot, taken with nothing in flight, both
  /// have taken the stage's optimizer_steps.
  void restore(const stage_snapshot& from);

 private:
  struct held_guess {
    activation guess;  // G̃_j, or ĝ_j itself with a local target
    int64_t tick;      // of its forward
  };

  stage& s_;
  std::size_t index_;
  std::size_t count_;
  bool last_;
  forward_gradient_options options_;
  uint64_t seed_;
  std::unique_ptr<local_loss> aux_;
  std::map<int64_t, held_guess> held_;  // by micro-batch
  std::size_t guess_peak_bytes_ = 0;
};

}  // namespace petra
