// A stage's part in stage-local recovery, both protocols.
#include "actors/stage_recovery.hpp"

#include "actors/stage_core.hpp"

namespace petra::detail {

void recovery_marks::restart() {
  drop_upto = abandoned_cuts = -1;
  quiet_forward_below = quiet_backward_below = -1;
  cancelled.clear();
  coming_again.clear();
  readmitted.clear();
  reissue_tick.clear();
}

bool recovery_marks::readmit(int64_t id) {
  if (coming_again.erase(id) == 0) return false;
  readmitted.insert(id);
  return true;
}

recovery_order hold_stage(stage_core& c, const std::function<bool(int64_t)>& held_backward) {
  c.recovery.held = true;
  recovery_order out;
  if (!c.in_phase) return out;
  out.phase = c.plan.phase;
  out.drop_upto = c.last_forwarded;
  out.forwards_done = c.tick;
  int64_t passed = c.backwards_in_phase;  // + those whose backward it holds: past every later stage
  out.evals_done = c.evals_done;
  out.tick = c.tick;
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
  if (!c.in_phase || order.phase != c.plan.phase)
    throw std::invalid_argument("a recovery order for phase " + std::to_string(order.phase) +
                                (c.in_phase ? ", the stage runs phase " + std::to_string(c.plan.phase)
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

}  // namespace petra::detail
