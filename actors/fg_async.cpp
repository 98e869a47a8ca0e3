// Forward gradients under the async protocol: each message is handled as it arrives, a stage's
// derivatives (in its FIFO order) before its next forward; stage 1 returns a micro-batch's credit
// when its own backward of it is done.
#include "actors/fg_faults.hpp"
#include "actors/fg_lockstep.hpp"

namespace petra::detail {
namespace {

/// The backward of micro-batch `id`'s estimate (`d` empty: a local target's, ready at its forward);
/// at stage 1 the micro-batch is finished and its credit returns to the loader.
void backward_step(async_self self, int64_t id, const std::vector<float>& d) {
  async_state& st = self->state;
  stage_core& c = st.core;
  bool slowed = false;
  clock_type::time_point begin, end;
  forward_gradient_stage::backward_result r =
      timed(c, slowed, begin, end, [&] { return c.ctx.fg->backward(id, d, c.phase.tick); });
  if (slowed) report_fault(self, c, fault_kind::slow);
  ++c.phase.backwards;
  c.work.trace_backward(r.step, id, begin, end);
  after_backward(self, c, r.step, id);
  if (c.is_first()) {
    ++st.completed;
    if (returns_credits(c)) self->send(c.out.links.loader, credit_return{1, c.phase.plan.phase, id});
  }
}

/// Derivatives that reached the stage (or came back from waiting out their delay): kept by micro-batch;
/// a copy of ones seen before is discarded, never applied twice.
void take_derivatives(async_self self, derivatives_data in) {
  async_state& st = self->state;
  stage_core& c = st.core;
  count_upstream(self, c, in);
  const int64_t id = in.s.micro_batch;
  if (!st.seen_backward.insert(id) || !st.derivatives.emplace(id, std::move(in)).second)
    return report_fault(self, c, fault_kind::duplicate_discarded);
  self->send(self, process_atom_v);  // forwards already in the mailbox queue up first; this backward then
                                     // runs ahead of them
}

}  // namespace

bool fg_run_step(async_self self) {
  async_state& st = self->state;
  stage_core& c = st.core;
  auto d = st.derivatives.find(c.ctx.compute->next_backward_id());
  if (d != st.derivatives.end()) {
    const derivatives_data in = std::move(d->second);
    st.derivatives.erase(d);
    backward_step(self, in.s.micro_batch, in.per_sample);
    return true;
  }
  if (st.forwards.empty()) return false;
  const bool eval_batch = !st.forwards.front().x.defined() && st.forwards.front().eval_index >= 0;
  // Pacing by stages, as for PETRA: a training forward waits while the stage's window is full.
  if (!eval_batch && c.ctx.stage_window > 0 &&
      static_cast<int64_t>(c.ctx.compute->outstanding()) >= c.ctx.stage_window)
    return false;
  forward_data in = std::move(st.forwards.front());
  st.forwards.pop_front();
  if (eval_batch) {  // on to the next stage, or to the loss
    forward_data out;
    out.s = c.stamp_for(-1, -1);
    out.eval_epoch = in.eval_epoch, out.eval_index = in.eval_index;
    out.eval_x = evaluate_batch(self, c, in.eval_epoch, in.eval_index, in.eval_x);
    if (!c.is_last()) emit(self, c, c.out.links.next, std::move(out), c.faults.forward_delay);
    return true;
  }
  maybe_crash(c);
  const int64_t id = in.s.micro_batch;
  std::vector<stage_tangent> received;
  for (stage_tangent& k : in.tangents) received.push_back({k.origin, c.work.take_in(k.direction)});
  bool slowed = false;
  clock_type::time_point begin, end;
  forward_gradient_stage::forward_result r = timed(c, slowed, begin, end, [&] {
    return c.ctx.fg->forward(c.work.take_in(in.x), id, c.phase.tick, in.labels, received);
  });
  if (slowed) report_fault(self, c, fault_kind::slow);
  c.work.trace_forward(id, begin, end, c.phase.tick);
  ++c.phase.tick;  // async "ticks" count this stage's forwards: the delay is in forwards
  c.phase.last_forwarded = std::max(c.phase.last_forwarded, id);
  if (c.is_last()) {  // the backward follows when the loss actor answers
    c.loss.hold(r.z, id);
    logits_data msg{c.stamp_for(id, -1), c.work.hand_out(r.z, device{}, id).x1};
    for (const stage_tangent& k : r.tangents)
      msg.tangents.push_back({k.origin, c.work.hand_out(k.direction, device{}, id)});
    self->send(c.out.links.loss, std::move(msg));
    return false;
  }
  forward_data out{c.stamp_for(id, -1), c.work.hand_out(r.z, c.out.links.next_device, id)};
  out.labels = std::move(in.labels);
  for (const stage_tangent& k : r.tangents)
    out.tangents.push_back({k.origin, c.work.hand_out(k.direction, c.out.links.next_device, id)});
  emit(self, c, c.out.links.next, std::move(out), c.faults.forward_delay);
  if (!c.ctx.fg->awaits_derivatives()) backward_step(self, id, {});
  return true;
}

void on_derivatives(async_self self, derivatives_data in) {
  async_state& st = self->state;
  stage_core& c = st.core;
  if (!c.ctx.fg)
    return fail(self, c, caf::make_error(petra_errc::bad_request),
                "a derivatives message reached a stage that does not train by forward gradients",
                in.s.micro_batch);
  if (in.s.phase > c.phase.plan.phase) return;  // cannot happen: a phase's derivatives answer its forwards
  if (classify(c, in.s) != arrival::current) return report_fault(self, c, fault_kind::duplicate_discarded);
  if (delayed_here(c, in)) return take_derivatives(self, std::move(in));
  const int copies = derivatives_copies(self, c, in.s.micro_batch);  // lost or doubled on the way
  const int64_t delay_ms = derivatives_delay(c);
  if (delay_ms > 0 && copies > 0) {  // late: the stage sends them to itself to wait the delay out
    in.s.sender = c.ctx.index;
    const auto me = caf::actor_cast<stage_actor>(self);
    for (int k = 0; k < copies; ++k) {
      report_fault(self, c, fault_kind::delay);
      self->delayed_send(me, std::chrono::milliseconds(delay_ms), in);
    }
    return;
  }
  for (int k = 0; k < copies; ++k) take_derivatives(self, in);
}

}  // namespace petra::detail
