// Forward gradients' lockstep ticks.
#include "actors/fg_lockstep.hpp"

#include "actors/fg_faults.hpp"

namespace petra::detail {
namespace {

/// Tick t needs a forward input: always at stage 1 (the loader's), elsewhere from tick 1 plus the
/// injected delay of the link into the stage on.
bool needs_forward(const stage_core& c, int64_t t) {
  return c.is_first() || t >= 1 + (c.faults_on() ? c.faults.in_forward_delay : 0);
}

/// The ticks injected on this stage's derivatives' round trip (the first attempt only: a replay runs clean).
int64_t link_delay(const stage_core& c) { return c.faults_on() ? c.ctx.fg_link_delay : 0; }

/// The stage's forward half: the forward of `in` (or its marker) with its tangents; the last stage
/// sends its logits and their tangents to the loss actor and waits (true then).
bool forward_half(lockstep_self self, forward_data& in, const forward_data& eval) {
  stage_core& c = self->state.core;
  forward_gradient_stage& fg = *c.ctx.fg;
  const int64_t t = c.phase.tick;
  const int64_t at = arrival_tick(c, t, c.faults.forward_delay);  // the next stage's tick for it
  const bool sends = !c.is_last() && at < c.phase.plan.ticks;     // nothing past the phase
  if (!in.x.defined()) {
    if (sends) {
      forward_data marker{c.stamp_for(-1, at), {}};
      marker.eval_epoch = eval.eval_epoch, marker.eval_index = eval.eval_index, marker.eval_x = eval.eval_x;
      emit(self, c, c.out.links.next, std::move(marker), c.faults.forward_delay);
    }
    return false;
  }
  const int64_t id = in.s.micro_batch;
  std::vector<stage_tangent> received;
  for (stage_tangent& k : in.tangents) received.push_back({k.origin, c.work.take_in(k.direction)});
  bool slowed = false;
  clock_type::time_point begin, end;
  forward_gradient_stage::forward_result r = timed(
      c, slowed, begin, end, [&] { return fg.forward(c.work.take_in(in.x), id, t, in.labels, received); });
  if (slowed) report_fault(self, c, fault_kind::slow);
  c.work.trace_forward(id, begin, end, c.phase.tick);
  c.phase.last_forwarded = id;
  if (c.is_last()) {  // the tick goes on when the loss actor answers
    c.loss.hold(r.z, id);
    logits_data msg{c.stamp_for(id, t), c.work.hand_out(r.z, device{}, id).x1};
    for (const stage_tangent& k : r.tangents)
      msg.tangents.push_back({k.origin, c.work.hand_out(k.direction, device{}, id)});
    self->send(c.out.links.loss, std::move(msg));
    return true;
  }
  if (sends) {
    forward_data msg{c.stamp_for(id, at), c.work.hand_out(r.z, c.out.links.next_device, id)};
    msg.eval_epoch = eval.eval_epoch, msg.eval_index = eval.eval_index, msg.eval_x = eval.eval_x;
    msg.labels = std::move(in.labels);
    for (const stage_tangent& k : r.tangents)
      msg.tangents.push_back({k.origin, c.work.hand_out(k.direction, c.out.links.next_device, id)});
    emit(self, c, c.out.links.next, std::move(msg), c.faults.forward_delay);
  }
  return false;
}

/// The backward of micro-batch `id`'s estimate (`d` empty: a local target's, ready at its forward).
void backward_half(lockstep_self self, int64_t id, const std::vector<float>& d) {
  stage_core& c = self->state.core;
  bool slowed = false;
  clock_type::time_point begin, end;
  forward_gradient_stage::backward_result r =
      timed(c, slowed, begin, end, [&] { return c.ctx.fg->backward(id, d, c.phase.tick); });
  if (slowed) report_fault(self, c, fault_kind::slow);
  ++c.phase.backwards;
  c.work.trace_backward(r.step, id, begin, end);
  after_backward(self, c, r.step, id);
}

}  // namespace

bool fg_run_tick(lockstep_self self) {
  lockstep_state& st = self->state;
  stage_core& c = st.core;
  const int64_t t = c.phase.tick;
  auto f = st.forwards.find(t);
  if (needs_forward(c, t) && f == st.forwards.end()) return false;
  const int64_t due = c.ctx.fg->due_at(t, link_delay(c));
  auto d = st.derivatives.find(t);
  if (due >= 0 && d == st.derivatives.end()) return false;
  maybe_crash(c);  // faults.crash_at_tick: the tick's inputs are there, as for PETRA
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
  if (returns_credits(c)) self->send(c.out.links.loader, credit_return{1, c.phase.plan.phase});
  ++c.phase.tick;
  return true;
}

bool fg_waiting_derivatives(const lockstep_state& st) {
  const stage_core& c = st.core;
  return c.phase.running && c.ctx.fg->due_at(c.phase.tick, link_delay(c)) >= 0 &&
         st.derivatives.count(c.phase.tick) == 0;
}

void on_derivatives(lockstep_self self, derivatives_data in) {
  lockstep_state& st = self->state;
  stage_core& c = st.core;
  if (!c.ctx.fg)
    return fail(self, c, caf::make_error(petra_errc::bad_request),
                "a derivatives message reached a stage that does not train by forward gradients",
                in.s.micro_batch);
  if (!admit(self, c, in)) return;
  const int copies = derivatives_copies(self, c, in.s.micro_batch);  // lost or doubled on the way
  if (const int64_t delay = derivatives_delay(c); delay > 0 && copies > 0) {
    in.s.tick += delay;  // late by that many ticks: the stage's backward waits for them
    report_fault(self, c, fault_kind::delay);
  }
  for (int k = 0; k < copies; ++k) {
    count_upstream(self, c, in);
    // A copy for a tick that ran, or a second one for a tick that waits: discarded, never applied twice.
    const int64_t t = in.s.tick;
    if (t < c.phase.tick || (t == c.phase.tick && c.loss.awaiting) || st.derivatives.count(t) > 0)
      report_fault(self, c, fault_kind::duplicate_discarded);
    else
      st.derivatives.emplace(t, in);
  }
  advance(self);
}

}  // namespace petra::detail
