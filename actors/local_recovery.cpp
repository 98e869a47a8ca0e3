// Stage-local recovery: hold, check, rebuild, forget, go on.
#include "actors/local_recovery.hpp"

#include <algorithm>

#include "training/free_memory.hpp"
#include "training/local_recovery_plan.hpp"

namespace petra {

using namespace messages;
using namespace atoms;

namespace {

struct local_outcome {
  bool done = false;
  std::string why_not;          // when not done: why only a global rollback can recover
  std::vector<int32_t> stages;  // rebuilt
  std::string from;
  int64_t lost = 0;      // lockstep: cancelled for good
  int64_t reissued = 0;  // async: cancelled, then sent again by the loader
};

local_outcome refused(std::string why) {
  local_outcome out;
  out.why_not = std::move(why);
  return out;
}

local_outcome rebuild(actor_pipeline& pipeline, control_channel& control, const run_failure& failure,
                      phase_plan& plan, bool lockstep,
                      const std::function<std::optional<restored_stage>(std::size_t)>& state_of) {
  std::vector<int32_t> lost;
  if (is_stage_failure(failure.kind(), failure.stage())) {
    lost = pipeline.lost_with(failure.stage());
    std::sort(lost.begin(), lost.end());
    // What the lost stages still send (the failure report behind their loss, or the loss behind the
    // report) is no news.
    for (int32_t j : lost) control.unwatch(pipeline.stages()[static_cast<std::size_t>(j)].address());
  }
  std::string why = local_recovery_refusal(failure.kind(), failure.stage(), lost, lockstep, plan.start_tick);
  if (!why.empty()) return refused(std::move(why));
  const int32_t a = lost.front(), b = lost.back();
  const auto J = static_cast<int32_t>(pipeline.stages().size());

  // Hold the feed and the stage before the lost ones (lockstep: and the one after): what went into
  // the lost stages is fixed now. Stage 1 lost: the loader is the one before.
  const recovery_order fed = control.ask<recovery_order>(pipeline.loader(), control_timeout, hold_atom_v);
  const recovery_order where =
      a == 0 ? fed
             : control.ask<recovery_order>(pipeline.stages()[static_cast<std::size_t>(a - 1)],
                                           control_timeout, hold_atom_v);
  recovery_order next;  // lockstep: where the stage after them stands
  if (lockstep && b + 1 < J)
    next = control.ask<recovery_order>(pipeline.stages()[static_cast<std::size_t>(b + 1)], control_timeout,
                                       hold_atom_v);
  held_positions at;
  at.feed_tick = fed.tick;
  at.before_tick = where.tick;
  at.before_evals = where.evals_done;
  at.cancel = where.cancel;
  at.after_tick = next.tick;
  at.scored_evals = control.ask<int64_t>(pipeline.loss(), control_timeout, hold_atom_v);
  const local_recovery_plan p = plan_local_recovery(b, J, lockstep, plan.ticks, plan.per_epoch, at);
  if (!p.refused.empty()) return refused(p.refused);
  const std::vector<int64_t>& reissue = p.reissue;
  const int64_t reissue_tick = p.reissue_tick, ticks = p.ticks, start = p.start, abandon = p.abandon;
  std::vector<restored_stage> states;
  for (int32_t j : lost) {
    std::optional<restored_stage> s = state_of(static_cast<std::size_t>(j));
    if (!s) return refused(max_restarts_refusal());
    states.push_back(std::move(*s));
  }

  // Rebuild the lost stages: their saved state, the running phase, every micro-batch that entered
  // them before forgotten, and counted as passed unless it is re-issued.
  // A snapshot in progress cannot complete: the lost stages' parts went with them.
  control.abandon_cuts(abandon);
  if (ticks > 0) plan.ticks = ticks;  // what a rebuilt stage is planned with, now and in a later recovery
  for (int32_t j : lost) pipeline.respawn(j);
  recovery_order rebuilt;
  rebuilt.phase = plan.phase;
  rebuilt.abandon_cuts = abandon;
  rebuilt.drop_upto = where.drop_upto;
  rebuilt.forwards_done = where.forwards_done;
  rebuilt.backwards_done = lockstep ? where.forwards_done : where.backwards_done;
  rebuilt.reissue = reissue;
  rebuilt.reissue_tick = reissue_tick;
  rebuilt.ticks = ticks;
  rebuilt.evals_done = where.evals_done;
  for (std::size_t i = 0; i < lost.size(); ++i) {
    const stage_actor& s = pipeline.stages()[static_cast<std::size_t>(lost[i])];
    pipeline.rewire(lost[i]);
    control.ask<recovery_order>(s, control_timeout, hold_atom_v);  // until its order: not on its plan alone
    control.ask<restore_atom>(s, control_timeout, restore_atom_v, states[i].state);
    control.ask<plan_atom>(s, control_timeout, plan_atom_v, plan);
    recovery_order mine = rebuilt;
    if (lockstep) {
      mine.tick = start;
      mine.forward_markers_upto = lost[i] == a ? where.tick : start;
      mine.backward_markers_upto = lost[i] == b && b + 1 < J ? next.tick : start;
      if (lost[i] == a) mine.needs_backward_from = where.needs_backward_from;
      if (lost[i] == b && b + 1 < J) mine.needs_forward_from = next.needs_forward_from;
    }
    control.ask<recover_atom>(s, control_timeout, recover_atom_v, mine);
  }
  // The stages after them forget the same micro-batches; the one right after sends to the new one.
  recovery_order after = rebuilt;
  after.forwards_done = after.evals_done = -1;
  for (int32_t j = b + 1; j < J; ++j) {
    if (j == b + 1) pipeline.rewire(j);
    control.ask<recover_atom>(pipeline.stages()[static_cast<std::size_t>(j)], control_timeout, recover_atom_v,
                              after);
  }
  recovery_order cancel;
  cancel.phase = plan.phase;
  cancel.cancel = where.cancel;
  cancel.abandon_cuts = abandon;
  cancel.reissue = reissue;
  cancel.reissue_tick = reissue_tick;
  cancel.ticks = ticks;
  control.ask<recover_atom>(pipeline.loss(), control_timeout, recover_atom_v, cancel);
  if (b == J - 1) pipeline.rewire_loss();
  // The stages before them cancel the lost micro-batches (stage 1 returns their credits), from
  // stage 1 on; the one right before, wired to the new one, goes last: released, it runs on at once
  // (lockstep: the cancelled ticks as markers), and a stage further up that ran such a marker
  // before its own order would keep the micro-batch outstanding. Then the feed, the lost ones first.
  if (a > 0)
    pipeline.rewire(a - 1);
  else
    pipeline.rewire_loader();
  for (int32_t j = 0; j < a; ++j)
    control.ask<recover_atom>(pipeline.stages()[static_cast<std::size_t>(j)], control_timeout, recover_atom_v,
                              cancel);
  recovery_order feed = cancel;
  if (a > 0) feed.cancel.clear();  // stage 1 returns their credits; else the loader takes them back
  control.ask<recover_atom>(pipeline.loader(), control_timeout, recover_atom_v, feed);

  local_outcome out;
  out.done = true;
  out.stages = lost;
  out.from = states.front().from;
  out.lost = p.lost;
  out.reissued = static_cast<int64_t>(reissue.size());
  return out;
}

}  // namespace

bool recover_stages(actor_pipeline& pipeline, control_channel& control, run_failure& failure,
                    phase_plan& plan, bool lockstep, const phase_request& request) {
  if (!request.local_state) return false;
  const auto t0 = std::chrono::steady_clock::now();
  if (failure.kind() == failure_kind::injected_crash) pipeline.crash_fired(failure.stage());
  const local_outcome r = rebuild(pipeline, control, failure, plan, lockstep, request.local_state);
  if (!r.done) {
    failure.not_local = r.why_not;
    return false;
  }
  training::return_free_memory();  // the lost stage's state, replaced by its part of the snapshot
  local_recovery report;
  report.kind = failure.kind();
  report.stage = failure.stage();
  report.what = failure.what();
  report.stages = r.stages;
  report.from = r.from;
  report.lost = r.lost;
  report.reissued = r.reissued;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (request.on_local_recovery) request.on_local_recovery(report);
  return true;
}

}  // namespace petra
