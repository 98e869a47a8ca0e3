// Live migration in the actor runtime: a stage's state leaves its actor for a new one on another
// device, thread count or node, at a drained point of the run.
#pragma once

#include <cstddef>

#include "actors/control.hpp"
#include "actors/pipeline.hpp"
#include "training/runtime.hpp"

namespace petra {

/// Nothing is in flight between the stages (async has no tick schedule to rely on): every stage is
/// out of its phase and its counts show every link carried exactly what its receiver took: the same
/// forwards (ticks in lockstep), backwards and evaluation batches at every stage, and in async as
/// many backwards as forwards (each micro-batch it forwarded came back). What a stage holds itself
/// (queues, pending cuts, guesses) it checks when asked for its state. Throws migration_refused
/// saying which stage or link is not drained.
void require_links_empty(control_channel& control, const std::vector<messages::stage_actor>& stages,
                         bool async);

/// Drained (between phases): stage j's state (weights, momentum, BN buffers, optimizer steps) from
/// its actor, a new actor at `to` wired in its place and given the state, the old one stopped.
/// `config` is the runtime's, updated to the new placement. `prove_drained` (the first move after a
/// phase): every stage's counts must first show nothing in flight on any link (a stage moved there
/// already has run no phase to count). Throws migration_refused, with nothing changed, when the
/// pipeline is not drained or the target cannot be had (no such device, an unreachable node).
migration_done migrate_stage(actor_pipeline& pipeline, control_channel& control, config::run_config& config,
                             std::size_t j, const config::migration_target& to, bool prove_drained);

}  // namespace petra
