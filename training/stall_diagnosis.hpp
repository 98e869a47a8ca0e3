// What stopped a pipeline that made no progress for faults.stall_seconds, from every stage's own
// account of where it stands: the link that lost a message, or a stage that hangs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/faults.hpp"

namespace petra {

/// Where a stage stands, as it says when a stall is diagnosed.
struct stage_standing {
  int32_t stage = -1;  // 0-based
  bool in_phase = false;
  int64_t tick = 0;               // lockstep: the tick it runs next; async: its forwards so far
  bool waiting_forward = false;   // lockstep: its forward input for `tick` is missing
  bool waiting_backward = false;  // its backward input (lockstep: for `tick`) or derivatives are missing
};

/// Names the stage and link that lost a message (lockstep: by ticks; async: the oldest
/// micro-batch's missing backward), or says that a stage hangs. Under forward gradients
/// (`forward_gradient`) what comes back to a stage is its derivatives, from the loss actor.
/// `stall_seconds` is the limit the message quotes.
run_failure diagnose_stall(const std::vector<stage_standing>& status, bool lockstep, int stall_seconds,
                           bool forward_gradient = false);

/// The limit as the diagnosis quotes it: "N s (faults.stall_seconds)".
std::string stall_limit(int stall_seconds);

}  // namespace petra
