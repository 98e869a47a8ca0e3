// A tangent of forward gradients in flight: the direction G̃_k of stage k's guess, carried forward
// through every later stage by forward mode beside the activation it belongs to.
#pragma once

#include <cstdint>

#include "compute/parameter.hpp"

namespace petra {

/// ż at some stage's output along the guess of stage `origin` (0-based): for stage `origin` itself its
/// guess G̃, further on G̃ pushed through the stages in between; at the loss, the logits' tangent.
struct stage_tangent {
  int32_t origin = -1;
  activation direction;
};

}  // namespace petra
