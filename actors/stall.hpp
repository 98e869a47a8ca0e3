// What stopped a pipeline that made no progress for faults.stall_seconds: the link that lost a
// message, or the stage that hangs, from every stage's own account of where it stands.
#pragma once

#include <vector>

#include "actors/control.hpp"
#include "messages/interfaces.hpp"
#include "training/faults.hpp"

namespace petra {

/// Asks every stage where it stands and names the stage and link (lockstep: by ticks; async: the
/// oldest micro-batch's missing backward), or says that a stage hangs. Under forward gradients
/// (`forward_gradient`) what comes back to a stage is its derivatives, from the loss actor.
run_failure diagnose_stall(control_channel& control, const std::vector<messages::stage_actor>& stages,
                           bool lockstep, int stall_seconds, bool forward_gradient = false);

}  // namespace petra
