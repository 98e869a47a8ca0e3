// Forward gradients' lockstep ticks.
#include "actors/fg_lockstep.hpp"

namespace petra::detail {
namespace {

/// The stage's forward half: the forward of `in` (or its marker) with its tangents; the last stage
/// sends its logits and their tangents to the loss actor and waits (true then).
bool forward_half(lockstep_self self, forward_data& in, const forward_data& eval) {
  stage_core& c = self->state.core;
  forward_gradient_stage& fg = *c.ctx.fg;
  const int64_t t = c.tick;
  const bool sends = !c.is_last() && t + 1 < c.plan.ticks;  // nothing past the phase
  if (!in.x.defined()) {
    if (sends) {
      forward_data marker{c.stamp_for(-1, t + 1), {}};
      marker.eval_epoch = eval.eval_epoch, marker.eval_index = eval.eval_index, marker.eval_x = eval.eval_x;
      self->send(c.links.next, std::move(marker));
    }
    return false;
  }
  const int64_t id = in.s.micro_batch;
  std::vector<stage_tangent> received;
  for (stage_tangent& k : in.tangents) received.push_back({k.origin, take_in(c, k.direction)});
  const auto begin = clock_type::now();
  forward_gradient_stage::forward_result r = fg.forward(take_in(c, in.x), id, t, in.labels, received);
  const auto end = clock_type::now();
  c.busy_seconds += std::chrono::duration<double>(end - begin).count();
  trace_forward(c, id, begin, end);
  c.last_forwarded = id;
  if (c.is_last()) {  // the tick goes on when the loss actor answers
    c.logits = r.z;
    c.logits_id = id;
    c.awaiting_loss = true;
    logits_data msg{c.stamp_for(id, t), hand_out(c, r.z, device{}, id).x1};
    for (const stage_tangent& k : r.tangents)
      msg.tangents.push_back({k.origin, hand_out(c, k.direction, device{}, id)});
    self->send(c.links.loss, std::move(msg));
    return true;
  }
  if (sends) {
    forward_data msg{c.stamp_for(id, t + 1), hand_out(c, r.z, c.links.next_device, id)};
    msg.eval_epoch = eval.eval_epoch, msg.eval_index = eval.eval_index, msg.eval_x = eval.eval_x;
    msg.labels = std::move(in.labels);
    for (const stage_tangent& k : r.tangents)
      msg.tangents.push_back({k.origin, hand_out(c, k.direction, c.links.next_device, id)});
    self->send(c.links.next, std::move(msg));
  }
  return false;
}

/// The backward of micro-batch `id`'s estimate (`d` empty: a local target's, ready at its forward).
void backward_half(lockstep_self self, int64_t id, const std::vector<float>& d) {
  stage_core& c = self->state.core;
  const auto begin = clock_type::now();
  forward_gradient_stage::backward_result r = c.ctx.fg->backward(id, d, c.tick);
  const auto end = clock_type::now();
  c.busy_seconds += std::chrono::duration<double>(end - begin).count();
  ++c.backwards_in_phase;
  trace_backward(c, r.step, id, begin, end);
  after_backward(self, c, r.step, id);
}

}  // namespace

bool fg_run_tick(lockstep_self self) {
  lockstep_state& st = self->state;
  stage_core& c = st.core;
  const int64_t t = c.tick;
  auto f = st.forwards.find(t);
  if ((c.is_first() || t >= 1) && f == st.forwards.end()) return false;
  const int64_t due = c.ctx.fg->due_at(t);
  auto d = st.derivatives.find(t);
  if (due >= 0 && d == st.derivatives.end()) return false;
  forward_data fin = f != st.forwards.end() ? std::move(f->second) : forward_data{};
  if (f != st.forwards.end()) st.forwards.erase(f);
  derivatives_data din;
  if (d != st.derivatives.end()) {
    din = std::move(d->second);
    st.derivatives.erase(d);
  }
  if (din.s.micro_batch != due || (due >= 0 && din.stage != c.ctx.index))
    throw std::logic_error("stage " + std::to_string(c.ctx.index + 1) + ": the derivatives for tick " +
                           std::to_string(t) + " are micro-batch " + std::to_string(din.s.micro_batch) +
                           "'s for stage " + std::to_string(din.stage + 1) + ", the guess due then is " +
                           (due >= 0 ? "micro-batch " + std::to_string(due) + "'s" : "none"));

  // First the tick's evaluation batch, with the weights the tick starts with (as the simulator).
  forward_data eval;
  if (fin.eval_index >= 0) {
    eval.eval_epoch = fin.eval_epoch, eval.eval_index = fin.eval_index;
    eval.eval_x = evaluate_batch(self, c, fin.eval_epoch, fin.eval_index, fin.eval_x);
  }
  const int64_t id = fin.x.defined() ? fin.s.micro_batch : -1;
  if (forward_half(self, fin, eval)) return false;
  if (id >= 0 && !c.ctx.fg->awaits_derivatives() && !c.is_last()) backward_half(self, id, {});
  if (due >= 0) backward_half(self, due, din.per_sample);
  if (c.is_first()) self->send(c.links.loader, credit_return{1, c.plan.phase});
  ++c.tick;
  return true;
}

bool fg_waiting_derivatives(const lockstep_state& st) {
  const stage_core& c = st.core;
  return c.in_phase && c.ctx.fg->due_at(c.tick) >= 0 && st.derivatives.count(c.tick) == 0;
}

void on_derivatives(lockstep_self self, derivatives_data in) {
  lockstep_state& st = self->state;
  stage_core& c = st.core;
  if (!c.ctx.fg)
    return fail(self, c, caf::make_error(petra_errc::bad_request),
                "a derivatives message reached a stage that does not train by forward gradients",
                in.s.micro_batch);
  if (!admit(self, c, in, st.early_derivatives)) return;
  count_upstream(self, c, in);
  const int64_t t = in.s.tick;
  if (t < c.tick || (t == c.tick && c.awaiting_loss) || !st.derivatives.emplace(t, std::move(in)).second)
    return report_fault(self, c, fault_kind::duplicate_discarded);
  advance(self);
}

}  // namespace petra::detail
