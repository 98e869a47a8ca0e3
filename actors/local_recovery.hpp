// Stage-local recovery of the actor runtimes (docs/design.md §6): after a stage (or the node holding
// some) is lost, only the lost stages are rebuilt, from the state training/ gives them, while every
// other stage keeps its live state. The micro-batches whose backward was inside the lost stages are
// cancelled at every stage that holds something of them, and the loader sends them again
// (re-issued: in async ahead of new ones, in lockstep after the phase's planned ticks; lockstep
// counts them as lost when the phase is about to end); everything else goes on where it was.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "actors/control.hpp"
#include "actors/pipeline.hpp"
#include "training/runtime.hpp"

namespace petra {

/// Tries it for `failure` in the running phase `plan` (`lockstep` or async) when `request` allows it
/// (local_state): true when the pipeline runs again (request.on_local_recovery was told). False,
/// with the reason in failure.not_local, when the failure is not a lost or failed stage, when stage
/// 1 is lost in lockstep (or in a phase resumed from a snapshot), when the lost stages are not
/// neighbours, when evaluation batches (or, in lockstep, an epoch's last micro-batch) were inside the lost
/// stages, when a lockstep failure came before the pipeline filled, or when no more recoveries are allowed:
/// the pipeline may then be held and must be rebuilt. A snapshot in progress is given up. Throws
/// run_failure when a step fails.
bool recover_stages(actor_pipeline& pipeline, control_channel& control, run_failure& failure,
                    messages::phase_plan& plan, bool lockstep, const phase_request& request);

}  // namespace petra
