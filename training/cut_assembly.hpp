// A consistent cut assembled from the parts the stages and the loss actor sent (docs/design.md §5):
// the runtime's decision of what the cut holds, apart from the actors that gather the parts.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compute/pipeline/stage_state.hpp"
#include "config/config.hpp"
#include "training/cut.hpp"

namespace petra {

/// One part as it arrived: a stage's tensors and JSON record, or the loss actor's record alone.
struct cut_piece {
  std::vector<named_tensor> tensors;
  std::string meta;
};

/// A cut before `tick` from its parts (one per stage, then the loss actor's): each stage's decoded,
/// the loss actor's, the count of micro-batches back at stage 1 (lockstep: from the tick and
/// `spacing`, the phase's ticks between two entering; async: from stage 1's part), and the epochs
/// open and whole at it (`open`) kept for the resume (the runtime's own record, opaque to the
/// trainer). Throws std::runtime_error for a part that does not decode or a loss actor still waiting
/// for labels.
pipeline_cut assemble_cut(const config::run_config& c, int64_t spacing, int64_t tick,
                          const std::vector<cut_piece>& parts, const nlohmann::json& open);

}  // namespace petra
