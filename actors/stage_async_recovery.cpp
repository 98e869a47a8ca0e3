// Stage-local recovery of an async stage (docs/design.md §6): the stage before the lost ones is held
// while they are rebuilt and says which of its micro-batches went into them and will not come
// back; every stage then forgets those, and the stages after the lost ones (and the rebuilt)
// forget everything up to the last micro-batch that entered them before the failure. The loader
// then sends the lost ones again: each stage takes a re-issue in as a micro-batch new to it.
#include "actors/stage_async.hpp"

namespace petra::detail {

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
      auto& after = i + 1 < st.cuts.size() ? st.cuts[i].reports_after : c.held_epoch_reports;
      for (auto& r : after) reports.push_back(std::move(r));
    }
    st.cuts.clear();
    c.hold_epoch_reports = false;
    c.held_epoch_reports.clear();
    for (auto& r : reports) self->send(c.links.coordinator, std::move(r));
  }
  for (auto f = st.forwards.begin(); f != st.forwards.end();)
    f = c.recovery.forgotten(f->s.micro_batch) ? st.forwards.erase(f) : std::next(f);
  for (auto b = st.backwards.begin(); b != st.backwards.end();)
    b = c.recovery.forgotten(b->first) ? st.backwards.erase(b) : std::next(b);
  if (c.awaiting_loss && c.recovery.forgotten(c.logits_id)) {
    c.awaiting_loss = false;
    c.logits = activation{};
    c.logits_id = -1;
  }
  if (order.backwards_done < 0) {
    // A stage before the lost ones: a cancelled micro-batch passes it again when re-issued (else
    // it has passed for good); stage 1 gives its credit back (its re-issue takes one again).
    const std::set<int64_t> again(order.reissue.begin(), order.reissue.end());
    for (int64_t id : dropped) c.backwards_in_phase += again.count(id) > 0 ? 0 : 1;
    if (c.is_first() && !dropped.empty())
      self->send(c.links.loader, credit_return{static_cast<int64_t>(dropped.size()), c.plan.phase});
  } else {
    c.backwards_in_phase = order.backwards_done;
    if (c.is_first()) st.completed = order.backwards_done;  // a rebuilt stage 1: the loader's count
  }
  if (order.forwards_done >= 0) c.tick = order.forwards_done;
  if (order.evals_done >= 0) c.evals_done = order.evals_done;
  c.recovery.held = false;
  advance(self);
}

}  // namespace petra::detail
