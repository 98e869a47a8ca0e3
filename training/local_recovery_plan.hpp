// The decisions of stage-local recovery (docs/design.md §6), apart from the actors that carry them
// out: whether a failure can be recovered at the lost stages alone, and if so which micro-batches
// are sent again, from which tick the rebuilt stages start and which snapshots are given up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "training/faults.hpp"

namespace petra {

/// Whether the failure is a lost or failed stage (`failed_stage`, 0-based), the only kind recovered
/// at its stages alone.
bool is_stage_failure(failure_kind kind, int32_t failed_stage);

/// Why a failure of `failed_stage` (0-based; -1 none) whose loss took the stages `lost` (sorted)
/// cannot be recovered at those stages alone, known before any actor is held; empty when it may be.
/// Refused: a failure that is not a lost or failed stage; lost stages that are not neighbours; stage
/// 1 lost in lockstep (it holds the run's count of ticks) or in a phase resumed from a snapshot
/// (`phase_start_tick` > 0: its count from before went with it).
std::string local_recovery_refusal(failure_kind kind, int32_t failed_stage, const std::vector<int32_t>& lost,
                                   bool lockstep, int64_t phase_start_tick);

/// Where the held actors stand, as they answered the hold.
struct held_positions {
  int64_t feed_tick = 0;        // the loader: async, the last cut marker sent; lockstep, the next tick
  int64_t before_tick = 0;      // the actor before the lost stages (the loader when stage 1 is lost)
  int64_t before_evals = 0;     // evaluation batches it passed on
  std::vector<int64_t> cancel;  // micro-batches whose backward was inside (or behind) the lost stages
  int64_t after_tick = 0;       // lockstep: the stage after the lost ones, when there is one
  int64_t scored_evals = 0;     // evaluation batches the loss actor scored
};

/// What the recovery does, or why it cannot.
struct local_recovery_plan {
  std::string refused;           // not empty: why only a global rollback can recover
  std::vector<int64_t> reissue;  // sent again by the loader, in their order in the epoch
  int64_t reissue_tick = -1;     // lockstep: the tick the first re-issued one enters; -1 none
  int64_t ticks = -1;            // lockstep with re-issues: the phase's new tick count; -1 unchanged
  int64_t start = -1;            // lockstep: the tick the rebuilt stages start from
  int64_t abandon = -1;          // snapshots (cuts) from this tick on are given up
  int64_t lost = 0;              // cancelled for good (lockstep: too late in the phase to re-issue)
};

/// The plan for lost neighbouring stages whose last is `last` (0-based) of `stages`, in a phase of
/// `planned_ticks` ticks (lockstep) with `per_epoch` micro-batches an epoch. Async re-issues every
/// cancelled micro-batch ahead of new ones and gives up the snapshots from the last marker the loader
/// sent. Lockstep's ticks are planned: what was lost is sent again after them (the phase grows by as
/// many ticks plus a drain) while no stage can have ended the phase (the loader more than J ticks
/// from its end), else it stays lost; the rebuilt stages start a tick before the earlier of their
/// neighbours. Refused: evaluation batches inside the lost stages; in lockstep an epoch's last
/// micro-batch inside them, or a failure before the pipeline filled.
local_recovery_plan plan_local_recovery(int32_t last, int32_t stages, bool lockstep, int64_t planned_ticks,
                                        int64_t per_epoch, const held_positions& at);

/// The refusal when the lost stages' state cannot be given back: the phase's recoveries are spent.
inline const char* max_restarts_refusal() { return "faults.max_restarts reached"; }

}  // namespace petra
