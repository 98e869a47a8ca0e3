// The coordinator's side of consistent cuts (docs/design.md §5): the parts the stages and the loss
// actor sent, handed to training/cut_assembly.hpp; and a cut handed back to them before a phase
// resumes from it.
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

/// assemble_cut over the parts a cut's marker gathered (`stages` stages', then the loss actor's),
/// their tensors moved out of them.
pipeline_cut cut_from_parts(const config::run_config& c, std::size_t stages, int64_t spacing, int64_t tick,
                            std::vector<messages::cut_part>& parts, const nlohmann::json& open);

/// Before a phase that resumes from `cut`: every stage and the loss actor get their part back, the
/// epochs open at the cut go back into `epochs`, and those whole before it (`at`: the cut's
/// position in the run, `per_epoch` micro-batches an epoch) are marked so. Throws
/// std::runtime_error when the cut's record of the runtime is damaged or its stages do not match.
void resume_from(control_channel& control, actor_pipeline& pipeline, const pipeline_cut& cut,
                 epoch_collector& epochs, int64_t at, int64_t per_epoch);

}  // namespace petra
