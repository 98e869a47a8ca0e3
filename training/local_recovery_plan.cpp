// Stage-local recovery's decisions.
#include "training/local_recovery_plan.hpp"

#include <algorithm>

#include "training/tick_schedule.hpp"

namespace petra {

bool is_stage_failure(failure_kind kind, int32_t failed_stage) {
  return failed_stage >= 0 && (kind == failure_kind::injected_crash || kind == failure_kind::lost_actor ||
                               kind == failure_kind::stage_exception);
}

std::string local_recovery_refusal(failure_kind kind, int32_t failed_stage, const std::vector<int32_t>& lost,
                                   bool lockstep, int64_t phase_start_tick) {
  if (!is_stage_failure(kind, failed_stage)) return "the failure is not a lost or failed stage";
  if (lost.empty()) return "no stage was lost";
  if (lost.back() - lost.front() + 1 != static_cast<int32_t>(lost.size()))
    return "the lost stages are not neighbours";
  // Stage 1 holds the run's count of completed micro-batches: in async the loader's record of what
  // it sent and what stage 1 completed gives it back (not across a resume from a snapshot: the
  // count from before it is not the loader's).
  if (lost.front() == 0 && lockstep)
    return "stage 1 is lost (lockstep: it holds the run's count of ticks run)";
  if (lost.front() == 0 && phase_start_tick > 0)
    return "stage 1 is lost in a phase resumed from a snapshot (its count from before went with it)";
  return {};
}

local_recovery_plan plan_local_recovery(int32_t last, int32_t stages, bool lockstep, int64_t planned_ticks,
                                        int64_t per_epoch, const held_positions& at) {
  local_recovery_plan out;
  if (at.before_evals > at.scored_evals) {
    out.refused = "evaluation batches were inside the lost stages";
    return out;
  }
  // Lockstep re-issues after the planned ticks: an epoch whose last micro-batch came back only then
  // would end late.
  for (int64_t id : at.cancel)
    if (lockstep && per_epoch > 0 && (id + 1) % per_epoch == 0) {
      out.refused = "micro-batch " + std::to_string(id) + ", an epoch's last, was inside the lost stages";
      return out;
    }
  const bool after = last + 1 < stages;
  if (lockstep) {
    out.start = (after ? std::min(at.before_tick, at.after_tick) : at.before_tick) - 1;
    if (out.start < 0) {
      out.refused = "the failure came before the pipeline filled";
      return out;
    }
  }
  // Every stage is at most J ticks ahead of the loader: short of that from the phase's end, none can
  // have ended it.
  if (!lockstep || at.feed_tick + stages < planned_ticks) out.reissue = at.cancel;
  std::sort(out.reissue.begin(), out.reissue.end());
  out.lost = static_cast<int64_t>(at.cancel.size() - out.reissue.size());
  if (lockstep && !out.reissue.empty()) {
    out.reissue_tick = planned_ticks;
    // The last re-issued micro-batch's round trip through the whole pipeline.
    out.ticks = planned_ticks + static_cast<int64_t>(out.reissue.size()) +
                round_trip_ticks(0, static_cast<std::size_t>(stages));
  }
  // Lockstep gives up every cut any stage may have run (none is more than J ticks ahead of the held
  // ones), or, re-issuing, every cut left in the phase: a resume from one taken before the re-issues
  // ran would not know of them. Async gives up those from the last marker sent.
  if (!lockstep)
    out.abandon = at.feed_tick;
  else if (out.reissue_tick >= 0)
    out.abandon = planned_ticks;
  else
    out.abandon = std::max(at.before_tick, at.after_tick) + stages;
  return out;
}

}  // namespace petra
