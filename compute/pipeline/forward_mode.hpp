// Forward mode through a run of blocks (a stage's, or a model's from a stage's output on) and on
// to the loss: the directional derivatives that forward gradients need, one per sample.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "compute/blocks/block.hpp"
#include "compute/forward/op_jvps.hpp"

namespace petra {

class stage;

/// (y, ẏ) of blocks[first, last) applied in order to x along ẋ and θ̇; nothing is kept.
std::pair<activation, activation> jvp_through(const std::vector<std::unique_ptr<block>>& blocks,
                                              std::size_t first, std::size_t last, const activation& x,
                                              const activation& x_dot, pass mode,
                                              const parameter_tangents& theta_dot = {});

/// The same through every block of stage `s`.
std::pair<activation, activation> stage_jvp(stage& s, const activation& x, const activation& x_dot, pass mode,
                                            const parameter_tangents& theta_dot = {});

/// blocks[first, end) then the softmax cross-entropy: the loss and ℓ̇_n = ⟨∇_x ℓ_n, ẋ⟩ (+ θ̇ terms)
/// per sample. The last block must be the head (the logits); `be` is the head's backend.
loss_jvp loss_jvp_from(backend& be, const std::vector<std::unique_ptr<block>>& blocks, std::size_t first,
                       const activation& x, const activation& x_dot, const std::vector<int32_t>& labels,
                       pass mode, const parameter_tangents& theta_dot = {});

}  // namespace petra
