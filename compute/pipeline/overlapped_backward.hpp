// PaReprop's overlapped backward of a run of reversible blocks: block i−1's input is rebuilt on a
// second stream while block i's weight and input gradients are computed on the stage's own; and,
// across stages, the last block's rebuild started ahead, from a rebuilt output sent before its gradient.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "compute/blocks/block.hpp"
#include "compute/pipeline/rebuild_lane.hpp"

namespace petra {

/// The last block's rebuild, started on the lane before the backward that takes it: its tape and
/// its input, filled by the lane's task (read them only after the lane's wait).
struct rebuild_started {
  tape taped;
  activation input;
};

/// Starts the rebuild of the last of `blocks`' input from their output `y` on `lane`, reading the
/// weights as `be`'s stream leaves them now, and returns while it runs. `out` must outlive the task:
/// hand it to overlapped_backward, or wait on the lane before dropping it.
void start_last_rebuild(const std::vector<std::unique_ptr<block>>& blocks, backend& be, rebuild_lane& lane,
                        const activation& y, rebuild_started& out);

/// (x, dx) of `blocks` (all reversible) from their output y and its gradient dy, parameter
/// gradients accumulated: the same ops on the same data as backward_from_output on each block from
/// the last to the first, so the same bits wherever each op's bits do not depend on its stream or
/// its thread count. Rebuilds run on `lane`, gradients on `be` (the blocks' backend); tensors cross
/// between them by export_for/import, so a stream waits for the other's event where it must.
/// `started`: the last block's rebuild, begun by start_last_rebuild from this `y` with the weights
/// this backward reads. `input_ready`: called with x (the tensors returned) as soon as it is
/// rebuilt, before the first block's gradients: a caller can send it ahead.
std::pair<activation, activation> overlapped_backward(
    const std::vector<std::unique_ptr<block>>& blocks, backend& be, rebuild_lane& lane, const activation& y,
    const activation& dy, rebuild_started* started = nullptr,
    const std::function<void(const activation&)>& input_ready = {});

}  // namespace petra
