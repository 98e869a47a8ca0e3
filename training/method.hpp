// The training methods of docs/design.md §1 and what each asks of a stage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compute/pipeline/stage.hpp"

namespace petra {

enum class method_kind { backprop, delayed, petra, forward_gradient };

/// forward_gradient: the direction G̃_j stage j projects on (its auxiliary head's ∇_{z_j} ℓ_j, or
/// Gaussian noise), and the gradient projected (the global loss's, or the local loss's own).
enum class guess_kind { local, random };
enum class target_kind { global, local };

struct forward_gradient_options {
  guess_kind guess = guess_kind::local;
  target_kind target = target_kind::global;
  int aux_width = 32;  // channels of each auxiliary head's conv3×3

  /// Whether stages j < J need an auxiliary head (its loss gives the guess or the target).
  bool needs_aux_head() const { return guess == guess_kind::local || target == target_kind::local; }
};

struct method_options {
  method_kind kind = method_kind::petra;
  bool stash_inputs = false;                  // delayed: every stage keeps its inputs
  bool stash_weights = false;                 // delayed: backward with the forward's weights
  forward_gradient_options forward_gradient;  // forward_gradient only

  /// "backprop", "petra", "delayed+inputs+weights", ...
  std::string str() const;
  /// Options of one stage; non-reversible stages keep inputs whatever this says. `last`: the
  /// pipeline's last stage, whose backward follows its forward at once (PETRA and delayed gradients
  /// without weight stashing tape its forward instead of running it again in the backward).
  stage_options for_stage(int inversion_sample_every, bool last) const;
};

}  // namespace petra
