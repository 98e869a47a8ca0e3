// PaReprop's overlapped backward of a run of reversible blocks: block i−1's input is rebuilt on a
// second stream while block i's weight and input gradients are computed on the stage's own.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "compute/blocks/block.hpp"
#include "compute/pipeline/rebuild_lane.hpp"

namespace petra {

/// (x, dx) of `blocks` (all reversible) from their output y and its gradient dy, parameter
/// gradients accumulated: the same ops on the same data as backward_from_output on each block from
/// the last to the first, so the same bits wherever each op's bits do not depend on its stream or
/// its thread count. Rebuilds run on `lane`, gradients on `be` (the blocks' backend); tensors cross
/// between them by export_for/import, so a stream waits for the other's event where it must.
std::pair<activation, activation> overlapped_backward(const std::vector<std::unique_ptr<block>>& blocks,
                                                      backend& be, rebuild_lane& lane, const activation& y,
                                                      const activation& dy);

}  // namespace petra
