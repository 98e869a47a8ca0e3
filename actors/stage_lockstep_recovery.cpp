// Stage-local recovery of a lockstep stage (docs/design.md §6). The clock is the data flow: a rebuilt
// stage starts at a tick its neighbours' progress allows, runs the inputs they had sent into the
// lost stages as markers, and sends nothing for ticks they already have. The micro-batches lost
// with the stages pass every stage as markers from then on, and again, as new, when the loader
// re-issues them after the phase's planned ticks.
#include "actors/stage_lockstep.hpp"

namespace petra::detail {

recovery_order on_hold(lockstep_self self) {
  lockstep_state& st = self->state;
  std::set<int64_t> coming;  // backwards it holds for ticks to come
  for (const auto& [t, b] : st.backwards)
    if (b.grad.defined()) coming.insert(b.s.micro_batch);
  recovery_order out = hold_stage(st.core, [&](int64_t id) { return coming.count(id) > 0; });
  if (!st.core.in_phase) return out;
  out.needs_forward_from = out.tick;
  while (st.forwards.count(out.needs_forward_from) > 0) ++out.needs_forward_from;
  out.needs_backward_from = out.tick;
  while (st.backwards.count(out.needs_backward_from) > 0) ++out.needs_backward_from;
  return out;
}

void on_recover(lockstep_self self, const recovery_order& order) {
  lockstep_state& st = self->state;
  stage_core& c = st.core;
  forget_lost(c, order);
  if (order.ticks > c.plan.ticks) c.plan.ticks = order.ticks;  // the re-issues come after the planned ticks
  c.recovery.abandoned_cuts = std::max(c.recovery.abandoned_cuts, order.abandon_cuts);
  if (order.tick >= 0) {  // rebuilt: its first tick, and the inputs lost with the old stage as markers
    const int32_t j = c.ctx.index;
    c.tick = order.tick;
    for (int64_t t = order.tick; t <= order.forward_markers_upto; ++t)
      if (!c.is_first()) st.forwards.emplace(t, forward_data{stamp{-1, t, 0, j - 1, c.plan.phase}, {}});
    for (int64_t t = order.tick; t <= order.backward_markers_upto; ++t)
      if (!c.is_last()) st.backwards.emplace(t, backward_data{stamp{-1, t, 0, j + 1, c.plan.phase}, {}, {}});
    c.recovery.quiet_forward_below = order.needs_forward_from;
    c.recovery.quiet_backward_below = order.needs_backward_from;
  }
  c.recovery.held = false;
  if (c.awaiting_loss && c.recovery.forgotten(c.logits_id)) {
    try {
      skip_loss(self);
    } catch (const std::exception& e) {
      return fail_with(self, c, e, c.logits_id);
    }
  }
  advance(self);
}

}  // namespace petra::detail
