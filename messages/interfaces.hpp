// The typed actor interface of each role. Peers are wired with untyped handles (a stage's
// neighbours are stages: the interface cannot name itself) and cast back on arrival.
#pragma once

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/type_ids.hpp"

namespace petra::messages {

/// A pipeline stage. wire: (previous stage, next stage, loss actor, loader, coordinator;
/// invalid handles where there is none) and the stage count J.
using stage_actor = caf::typed_actor<
    caf::reacts_to<forward_data>,
    caf::reacts_to<backward_data>,
    caf::reacts_to<atoms::process_atom>,
    caf::reacts_to<atoms::flush_atom, int64_t>,
    caf::replies_to<atoms::faults_atom, stage_faults>::with<atoms::faults_atom>,
    caf::replies_to<atoms::wire_atom, caf::actor, caf::actor, caf::actor, caf::actor, caf::actor, int32_t>::with<
        atoms::wire_atom>,
    caf::replies_to<atoms::plan_atom, phase_plan>::with<atoms::plan_atom>,
    caf::replies_to<eval_data>::with<eval_data>,
    caf::replies_to<atoms::report_atom>::with<stage_report>,
    caf::replies_to<atoms::state_atom>::with<stage_state>,
    caf::replies_to<atoms::restore_atom, stage_state>::with<atoms::restore_atom>>;

/// The loss actor: labels from the loader; logits from the last stage, answered with dlogits;
/// evaluation logits with their labels; its totals per phase (reset by report).
using loss_actor = caf::typed_actor<
    caf::reacts_to<labels_data>,
    caf::replies_to<logits_data>::with<loss_data>,
    caf::replies_to<atoms::eval_atom, logits_data, labels_data>::with<loss_data>,
    caf::replies_to<atoms::report_atom>::with<loss_report>>;

/// The data loader: a plan starts feeding a phase to the first stage (and labels to the loss
/// actor); credits come back from the first stage.
using loader_actor = caf::typed_actor<
    caf::replies_to<atoms::wire_atom, caf::actor, caf::actor, int32_t>::with<atoms::wire_atom>,
    caf::replies_to<atoms::plan_atom, phase_plan>::with<atoms::plan_atom>,
    caf::reacts_to<atoms::credit_atom, int64_t>>;

/// A node: a process that hosts stages for a coordinator. spawn: (the resolved config as YAML,
/// stage index, optimizer steps per epoch) → the new stage actor (untyped; cast to stage_actor).
/// kill: the node process exits (as if killed) after the given seconds: fault injection.
using node_actor =
    caf::typed_actor<caf::replies_to<atoms::spawn_atom, std::string, int32_t, int64_t>::with<caf::actor>,
                     caf::reacts_to<atoms::kill_atom, double>>;

}  // namespace petra::messages
