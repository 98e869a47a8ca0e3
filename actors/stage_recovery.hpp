// Stage-local recovery (docs/design.md §6) as both stage protocols take part in it (private to actors/):
// while the coordinator rebuilds lost stages a stage is held; then it forgets the micro-batches lost
// with them (late messages of theirs dropped, or in lockstep run as markers) until, in async, the
// loader sends them again.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "messages/messages.hpp"
#include "training/recovery_marks.hpp"

namespace petra::detail {

struct stage_core;

/// Holds the stage and says where it stands; its outstanding micro-batches whose backward it does not
/// hold (`held_backward` says) are the lost ones. A stage outside a phase (one being rebuilt) is only
/// held: its order, not its plan, starts it.
messages::recovery_order hold_stage(stage_core& c, const std::function<bool(int64_t)>& held_backward);
/// Takes an order's lost micro-batches (checked against the running phase: also those taken in
/// again after an earlier recovery) and drops their outstanding forwards; returns those dropped.
std::vector<int64_t> forget_lost(stage_core& c, const messages::recovery_order& order);

}  // namespace petra::detail
