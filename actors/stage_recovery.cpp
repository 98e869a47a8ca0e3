// A stage's part in stage-local recovery (docs/design.md §6), both protocols: held while the lost
// stages are rebuilt, then told which micro-batches to forget.
//
// Async: the stage before the lost ones is held while they are rebuilt and says which of its
// micro-batches went into them and will not come back; every stage then forgets those, and the stages after
// the lost ones (and the rebuilt) forget everything up to the last micro-batch that entered them before the
// failure. The loader then sends the lost ones again: each stage takes a re-issue in as a micro-batch new to
// it.
//
// Lockstep: the clock is the data flow; a rebuilt stage starts at a tick its neighbours' progress allows,
// runs the inputs they had sent into the lost stages as markers, and sends nothing for ticks they already
// have. The micro-batches lost with the stages pass every stage as markers from then on, and again, as new,
// when the loader re-issues them after the phase's planned ticks.
#include "actors/stage_recovery.hpp"

#include "actors/stage_async.hpp"
#include "actors/stage_core.hpp"
#include "actors/stage_lockstep.hpp"

namespace petra::detail {

recovery_order hold_stage(stage_core& c, const std::function<bool(int64_t)>& held_backward) {
  c.recovery.held = true;
  recovery_order out;
  if (!c.phase.running) return out;
  out.phase = c.phase.plan.phase;
  out.drop_upto = c.phase.last_forwarded;
  out.forwards_done = c.phase.tick;
  int64_t passed = c.phase.backwards;  // + those whose backward it holds: past every later stage
  out.evals_done = c.phase.evals;
  out.tick = c.phase.tick;
  for (int64_t id : c.ctx.compute->outstanding_ids()) {
    if (held_backward(id))
      ++passed;
    else
      out.cancel.push_back(id);  // its backward was in (or behind) the lost stages
  }
  out.backwards_done = passed;
  return out;
}

std::vector<int64_t> forget_lost(stage_core& c, const recovery_order& order) {
  if (!c.phase.running || order.phase != c.phase.plan.phase)
    throw std::invalid_argument("a recovery order for phase " + std::to_string(order.phase) +
                                (c.phase.running
                                     ? ", the stage runs phase " + std::to_string(c.phase.plan.phase)
                                     : std::string(", the stage is between phases")));
  recovery_marks& r = c.recovery;
  r.cancelled.insert(order.cancel.begin(), order.cancel.end());
  r.drop_upto = std::max(r.drop_upto, order.drop_upto);
  // A re-issued micro-batch lost again is forgotten again, until its next re-issue.
  for (int64_t id : order.cancel) r.readmitted.erase(id);
  r.readmitted.erase(r.readmitted.begin(), r.readmitted.upper_bound(order.drop_upto));
  r.coming_again.insert(order.reissue.begin(), order.reissue.end());
  if (order.reissue_tick >= 0)
    for (std::size_t k = 0; k < order.reissue.size(); ++k)
      r.reissue_tick[order.reissue[k]] = order.reissue_tick + static_cast<int64_t>(k);
  return c.ctx.compute->drop([&](int64_t id) { return r.forgotten(id); });
}

recovery_order on_hold(async_self self) {
  async_state& st = self->state;
  return hold_stage(st.core, [&](int64_t id) { return st.backwards.count(id) > 0; });
}

void on_recover(async_self self, const recovery_order& order) {
  async_state& st = self->state;
  stage_core& c = st.core;
  const std::vector<int64_t> dropped = forget_lost(c, order);
  if (order.abandon_cuts > c.recovery.abandoned_cuts) {
    // The cuts in progress are given up: the epoch reports held behind them go now, in order.
    c.recovery.abandoned_cuts = order.abandon_cuts;
    std::vector<stage_epoch_report> reports;
    for (std::size_t i = 0; i < st.cuts.size(); ++i) {
      auto after = i + 1 < st.cuts.size() ? std::move(st.cuts[i].reports_after) : c.out.take_held();
      for (auto& r : after) reports.push_back(std::move(r));
    }
    st.cuts.clear();
    c.out.stop_holding();
    for (auto& r : reports) self->send(c.out.links.coordinator, std::move(r));
  }
  for (auto f = st.forwards.begin(); f != st.forwards.end();)
    f = c.recovery.forgotten(f->s.micro_batch) ? st.forwards.erase(f) : std::next(f);
  for (auto b = st.backwards.begin(); b != st.backwards.end();)
    b = c.recovery.forgotten(b->first) ? st.backwards.erase(b) : std::next(b);
  if (c.loss.awaiting && c.recovery.forgotten(c.loss.id)) {
    c.loss.drop();
  }
  if (order.backwards_done < 0) {
    // A stage before the lost ones: a cancelled micro-batch passes it again when re-issued (else
    // it has passed for good); stage 1 gives its credit back (its re-issue takes one again).
    const std::set<int64_t> again(order.reissue.begin(), order.reissue.end());
    for (int64_t id : dropped) c.phase.backwards += again.count(id) > 0 ? 0 : 1;
    if (c.is_first() && !dropped.empty())
      self->send(c.out.links.loader, credit_return{static_cast<int64_t>(dropped.size()), c.phase.plan.phase});
  } else {
    c.phase.backwards = order.backwards_done;
    if (c.is_first()) st.completed = order.backwards_done;  // a rebuilt stage 1: the loader's count
  }
  if (order.forwards_done >= 0) c.phase.tick = order.forwards_done;
  if (order.evals_done >= 0) c.phase.evals = order.evals_done;
  c.recovery.held = false;
  advance(self);
}

recovery_order on_hold(lockstep_self self) {
  lockstep_state& st = self->state;
  std::set<int64_t> coming;  // backwards it holds for ticks to come
  for (const auto& [t, b] : st.backwards)
    if (b.grad.defined()) coming.insert(b.s.micro_batch);
  recovery_order out = hold_stage(st.core, [&](int64_t id) { return coming.count(id) > 0; });
  if (!st.core.phase.running) return out;
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
  if (order.ticks > c.phase.plan.ticks)
    c.phase.plan.ticks = order.ticks;  // the re-issues come after the planned ticks
  c.recovery.abandoned_cuts = std::max(c.recovery.abandoned_cuts, order.abandon_cuts);
  if (order.tick >= 0) {  // rebuilt: its first tick, and the inputs lost with the old stage as markers
    const int32_t j = c.ctx.index;
    c.phase.tick = order.tick;
    for (int64_t t = order.tick; t <= order.forward_markers_upto; ++t)
      if (!c.is_first()) st.forwards.emplace(t, forward_data{stamp{-1, t, 0, j - 1, c.phase.plan.phase}, {}});
    for (int64_t t = order.tick; t <= order.backward_markers_upto; ++t)
      if (!c.is_last())
        st.backwards.emplace(t, backward_data{stamp{-1, t, 0, j + 1, c.phase.plan.phase}, {}, {}});
    c.recovery.quiet_forward_below = order.needs_forward_from;
    c.recovery.quiet_backward_below = order.needs_backward_from;
  }
  c.recovery.held = false;
  if (c.loss.awaiting && c.recovery.forgotten(c.loss.id)) {
    try {
      skip_loss(self);
    } catch (const std::exception& e) {
      return fail_with(self, c, e, c.loss.id);
    }
  }
  advance(self);
}

}  // namespace petra::detail
