// What a runtime reports of one stage over a period: the stage's own record (delays, staleness,
// FIFO/stash peaks, inversion error) plus what only the runtime sees (mailbox, busy time).
#pragma once

#include <cstdint>

#include "compute/pipeline/stage.hpp"

namespace petra {

struct stage_report {
  int32_t stage = -1;          // 0-based
  int64_t weight_version = 0;  // optimizer steps taken (the live weights' version)
  stage_stats stats;
  int64_t mailbox_peak = 0;  // forward + backward messages waiting at once (actor runtimes)
  double busy_seconds = 0;   // computing (actor runtimes)
  double phase_busy_seconds =
      0;                    // computing since the phase began (every runtime): what rebalancing compares
  double wall_seconds = 0;  // the period
  // Actor runtimes: the period's time with nothing to compute, by what the stage waited for: input
  // (no forward to run: the stage before, the loader) or a gradient (its next backward's gradient,
  // the loss, or a window full of micro-batches awaiting backward). Busy and waiting aside, the rest
  // of wall_seconds is message handling, hand-over and the time between phases.
  double wait_input_seconds = 0;
  double wait_gradient_seconds = 0;
  int64_t device_bytes = 0;  // held by live tensors on the stage's device at the report (0 on the CPU)
  // forward_gradient's diagnostic: cos(ĝ_j, ∇_{z_j} L) on the sampled micro-batches (the simulator's).
  int64_t gradient_cosine_samples = 0;
  double gradient_cosine_sum = 0;
  double gradient_cosine_min = 1;
  // forward_gradient in the actor runtimes: the messages this stage received from downstream (its
  // derivatives; any backward message would count too) and their serialized bytes.
  int64_t upstream_messages = 0;
  int64_t upstream_bytes = 0;
  // Fault events (injected faults, discarded copies) this stage sent the coordinator in its phase:
  // the coordinator waits until it has taken as many before it totals the phase's faults.
  int64_t fault_events = 0;

  /// The report of `s` now, with the runtime's own measurements left at zero.
  static stage_report of(const petra::stage& s) {
    stage_report r;
    r.stage = static_cast<int32_t>(s.index());
    r.weight_version = s.weight_version();
    r.stats = s.stats();
    r.device_bytes = s.compute_backend().device_bytes_in_use();
    return r;
  }
};

}  // namespace petra
