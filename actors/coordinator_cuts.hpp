// The coordinator's side of consistent cuts (docs/design.md §5): a cut assembled from the parts the
// stages and the loss actor sent, and a cut handed back to them before a phase resumes from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "actors/control.hpp"
#include "actors/pipeline.hpp"
#include "config/config.hpp"
#include "training/cut.hpp"
#include "training/epoch_collector.hpp"

namespace petra {

/// A cut before `tick` from its parts (`stages` stage parts, then the loss actor's): each stage's
/// decoded, the loss actor's, the count of micro-batches back at stage 1 (lockstep: from the tick
/// and `spacing`, the phase's ticks between two entering; async: from stage 1's part), and the
/// epochs open and whole at it (`open`) kept for the resume (the runtime's own record, opaque to
/// the trainer). Throws std::runtime_error for a part that does not decode or a loss actor still
/// waiting for labels.
pipeline_cut assemble_cut(const config::run_config& c, std::size_t stages, int64_t spacing, int64_t tick,
                          std::vector<messages::cut_part>& parts, const nlohmann::json& open);

/// Before a phase that resumes from `cut`: every stage and the loss actor get their part back, the
/// epochs open at the cut go back into `epochs`, and those whole before it (`at`: the cut's
/// position in the run, `per_epoch` micro-batches an epoch) are marked so. Throws
/// std::runtime_error when the cut's record of the runtime is damaged or its stages do not match.
void resume_from(control_channel& control, actor_pipeline& pipeline, const pipeline_cut& cut,
                 epoch_collector& epochs, int64_t at, int64_t per_epoch);

}  // namespace petra
