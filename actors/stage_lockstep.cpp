// The lockstep protocol.
#include "actors/stage_lockstep.hpp"

#include <algorithm>

#include "actors/fg_faults.hpp"
#include "actors/fg_lockstep.hpp"
#include "training/snapshot.hpp"

namespace petra::detail {
namespace {

void note_mailbox(lockstep_state& st) {
  const auto waiting = static_cast<int64_t>(st.forwards.size() + st.backwards.size());
  st.core.work.record.saw_mailbox(waiting);
  st.core.work.timeline.mailbox(static_cast<std::size_t>(waiting), clock_type::now());
}

/// The inputs tick t needs: stage 1 always reads the loader; the others from tick 1 (plus the
/// injected delay of the link into them) on; the last stage's backward input is its loss.
bool needs_forward(const stage_core& c, int64_t t) {
  return c.is_first() || t >= 1 + (c.faults_on() ? c.faults.in_forward_delay : 0);
}
bool needs_backward(const stage_core& c, int64_t t) {
  return !c.is_last() && t >= 1 + (c.faults_on() ? c.faults.in_backward_delay : 0);
}

/// Tick t has taken its inputs already: it ran, or it runs now and waits for the loss.
bool already_ran(const stage_core& c, int64_t t) {
  return t < c.phase.tick || (t == c.phase.tick && c.loss.awaiting);
}

/// The tick's forward message to the next stage: the training output (or the marker) and, beside
/// it, the output of the tick's evaluation batch when there was one.
void send_forward(lockstep_self self, int64_t id, int64_t t, const activation& out,
                  const forward_data& eval) {
  stage_core& c = self->state.core;
  const int64_t at = arrival_tick(c, t, c.faults.forward_delay);
  if (at >= c.phase.plan.ticks || at < c.recovery.quiet_forward_below)
    return;  // past the phase, or the next stage has it
  forward_data msg{c.stamp_for(id, at), c.work.hand_out(out, c.out.links.next_device, id)};
  msg.eval_epoch = eval.eval_epoch, msg.eval_index = eval.eval_index, msg.eval_x = eval.eval_x;
  emit(self, c, c.out.links.next, std::move(msg), c.faults.forward_delay);
}

void send_backward(lockstep_self self, int64_t id, int64_t t, const activation& rebuilt,
                   const activation& grad) {
  stage_core& c = self->state.core;
  if (c.is_first()) return;
  const int64_t at = arrival_tick(c, t, c.faults.backward_delay);
  if (at >= c.phase.plan.ticks || at < c.recovery.quiet_backward_below) return;
  emit(self, c, c.out.links.prev,
       backward_data{c.stamp_for(id, at), c.work.hand_out(rebuilt, c.out.links.prev_device, id),
                     c.work.hand_out(grad, c.out.links.prev_device, id)},
       c.faults.backward_delay);
}

/// The backward half of tick t at a stage before the last (the last runs it with the loss): the
/// backward of `in`, or a marker, upstream.
void backward_half(lockstep_self self, const backward_data& in) {
  stage_core& c = self->state.core;
  const int64_t t = c.phase.tick;
  if (!in.grad.defined()) return send_backward(self, -1, t, {}, {});
  bool slowed = false;
  stage::backward_result r = timed_backward(c, in.rebuilt, in.grad, in.s.micro_batch, slowed,
                                            ahead_sender(self, c, in.s.micro_batch, t));
  count_slowed(self, c, slowed);
  after_backward(self, c, r, in.s.micro_batch);
  send_backward(self, in.s.micro_batch, t, r.input, r.input_grad);
}

/// The end of tick t: the loader's credit at stage 1 (forward gradients: see returns_credits), and the clock.
void end_tick(lockstep_self self) {
  stage_core& c = self->state.core;
  if (returns_credits(c)) self->send(c.out.links.loader, credit_return{1, c.phase.plan.phase});
  ++c.phase.tick;
}

/// The stage's part of the cut before tick t: its state and what it holds in flight, with the
/// messages it holds for tick t (sent before the cut by its neighbours), to the coordinator; the
/// last stage marks the cut to the loss actor, behind every logits message it sent before.
void send_cut_part(lockstep_self self, int64_t t, forward_data* f, backward_data* b) {
  stage_core& c = self->state.core;
  stage_cut part = cut_stage(*c.ctx.compute, *c.ctx.device);
  if (c.is_first()) f = nullptr;  // the loader's message for tick t: it sends it again on resume
  if (f && f->x.defined() && !c.recovery.forgotten(f->s.micro_batch))
    part.forward = cut_forward{f->s.micro_batch, c.work.on_host(f->x)};
  if (b && b->grad.defined() && !c.recovery.forgotten(b->s.micro_batch)) {
    part.backward.id = b->s.micro_batch;
    part.backward.rebuilt = c.work.on_host(b->rebuilt);
    part.backward.grad = c.work.on_host(b->grad);
  }
  if (f && f->eval_index >= 0) {
    part.eval.epoch = f->eval_epoch;
    part.eval.index = f->eval_index;
    part.eval.images = c.work.on_host(f->eval_x);
  }
  encoded_stage_cut e = encode_stage_cut(part);
  if (c.is_last()) self->send(c.out.links.loss, cut_marker{t});
  self->send(c.out.links.coordinator,
             cut_part{c.ctx.index, t, c.phase.plan.phase, std::move(e.tensors), std::move(e.meta)});
}

/// The forward of forgotten micro-batch `id` for tick t is its re-issue (after every planned tick)
/// rather than a late one of the lost stages: it is taken in from now on.
bool readmit(stage_core& c, int64_t id, int64_t t) {
  const auto at = c.recovery.reissue_tick.find(id);
  return at != c.recovery.reissue_tick.end() && t >= at->second && c.recovery.readmit(id);
}

bool cut_due(const stage_core& c, int64_t t) {
  const auto& ticks = c.phase.plan.cut_ticks;
  return !(c.phase.plan.start_tick > 0 && t == c.phase.plan.start_tick) && t > c.recovery.abandoned_cuts &&
         std::binary_search(ticks.begin(), ticks.end(), t);
}

/// Runs tick `tick` if its inputs are there. False when it must wait (for an input or the loss).
bool run_tick(lockstep_self self) {
  lockstep_state& st = self->state;
  stage_core& c = st.core;
  if (c.ctx.fg) return fg_run_tick(self);  // training.method forward_gradient
  const int64_t t = c.phase.tick;
  auto f = st.forwards.find(t);
  auto b = st.backwards.find(t);
  if ((needs_forward(c, t) && f == st.forwards.end()) || (needs_backward(c, t) && b == st.backwards.end()))
    return false;
  if (cut_due(c, t))
    send_cut_part(self, t, f != st.forwards.end() ? &f->second : nullptr,
                  b != st.backwards.end() ? &b->second : nullptr);
  maybe_crash(c);
  forward_data fin = f != st.forwards.end() ? std::move(f->second) : forward_data{};
  backward_data bin = b != st.backwards.end() ? std::move(b->second) : backward_data{};
  if (f != st.forwards.end()) st.forwards.erase(f);
  if (b != st.backwards.end()) st.backwards.erase(b);
  // A micro-batch lost in a stage-local recovery passes as a marker, unless this is its re-issue.
  if (fin.x.defined() && c.recovery.forgotten(fin.s.micro_batch) && !readmit(c, fin.s.micro_batch, t))
    fin.x = activation{}, fin.s.micro_batch = -1;
  if (bin.grad.defined() && c.recovery.forgotten(bin.s.micro_batch)) bin = backward_data{};

  // First the tick's evaluation batch, with the weights the tick starts with (as the simulator).
  forward_data eval;
  if (fin.eval_index >= 0) {
    eval.eval_epoch = fin.eval_epoch, eval.eval_index = fin.eval_index;
    eval.eval_x = evaluate_batch(self, c, fin.eval_epoch, fin.eval_index, fin.eval_x);
    if (c.is_last()) eval.eval_index = -1;  // its logits went to the loss actor
  }
  const bool backward_first = c.ctx.backward_first && !c.is_last();  // training.tick_order
  if (backward_first) backward_half(self, bin);
  if (fin.x.defined()) {
    const int64_t id = fin.s.micro_batch;
    bool slowed = false;
    activation out = timed_forward(c, fin.x, id, slowed);
    c.phase.last_forwarded = id;
    count_slowed(self, c, slowed);
    if (c.is_last()) {  // the tick goes on when the loss actor answers
      c.loss.hold(out, id);
      self->send(c.out.links.loss, logits_data{c.stamp_for(id, t), c.work.hand_out(out, device{}, id).x1});
      return false;
    }
    send_forward(self, id, t, out, eval);
  } else if (c.is_last()) {
    send_backward(self, -1, t, {}, {});
  } else {
    send_forward(self, -1, t, {}, eval);
  }
  if (!backward_first && !c.is_last()) backward_half(self, bin);
  end_tick(self);
  return true;
}

}  // namespace

void advance(lockstep_self self) {
  stage_core& c = self->state.core;
  if (!c.phase.running || c.loss.awaiting || c.recovery.held) return;
  try {
    while (c.phase.tick < c.phase.plan.ticks && run_tick(self)) {
    }
    if (!c.loss.awaiting && c.phase.tick >= c.phase.plan.ticks) finish_phase(self, c);
    // Until the next input (or the loss) arrives: the tick's forward input first, else its gradient.
    const lockstep_state& st = self->state;
    mark_idle(c, !c.loss.awaiting && needs_forward(c, c.phase.tick) && st.forwards.count(c.phase.tick) == 0);
  } catch (const std::exception& e) {
    fail_with(self, c, e, -1);
  }
}

void on_plan(lockstep_self self, const phase_plan& plan) {
  lockstep_state& st = self->state;
  begin_phase(st.core, plan);
  st.forwards.clear();
  st.backwards.clear();
  st.derivatives.clear();
  if (plan.start_tick > 0) {  // resuming from a cut: its messages for the cut's tick
    stage_core& c = st.core;
    c.phase.tick = plan.start_tick;
    if (st.resume) {  // markers where the part holds no message: every tick but the loader's needs one
      const stage_cut& part = *st.resume;
      const int32_t j = c.ctx.index;
      forward_data f{stamp{part.forward.id, c.phase.tick, 0, j - 1, plan.phase}, part.forward.x};
      if (part.eval.index >= 0)
        f.eval_epoch = part.eval.epoch, f.eval_index = part.eval.index, f.eval_x = part.eval.images;
      if (!c.is_first()) st.forwards.emplace(c.phase.tick, std::move(f));
      if (!c.is_last())
        st.backwards.emplace(c.phase.tick,
                             backward_data{stamp{part.backward.id, c.phase.tick, 0, j + 1, plan.phase},
                                           part.backward.rebuilt, part.backward.grad});
    }
  }
  st.resume.reset();
  stage_inbox::early early = st.core.inbox.take();
  for (auto& f : early.forwards) on_forward(self, std::move(f));
  for (auto& b : early.backwards) on_backward(self, std::move(b));
  for (auto& d : early.derivatives) on_derivatives(self, std::move(d));
  advance(self);
}

void on_forward(lockstep_self self, forward_data in) {
  lockstep_state& st = self->state;
  if (!admit(self, st.core, in)) return;
  // A second copy of a tick's message: that tick is waiting for it, or has already run.
  const int64_t t = in.s.tick;
  if (already_ran(st.core, t) || !st.forwards.emplace(t, std::move(in)).second)
    return report_fault(self, st.core, fault_kind::duplicate_discarded);
  note_mailbox(st);
  advance(self);
}

void on_backward(lockstep_self self, backward_data in) {
  lockstep_state& st = self->state;
  if (is_sent_ahead(in)) return take_ahead(st.core, std::move(in));  // not the tick's input: a head start
  if (!admit(self, st.core, in)) return;
  if (st.core.ctx.fg) count_upstream(self, st.core, in);  // forward gradients send none: shown if one comes
  const int64_t t = in.s.tick;
  if (already_ran(st.core, t) || !st.backwards.emplace(t, std::move(in)).second)
    return report_fault(self, st.core, fault_kind::duplicate_discarded);
  note_mailbox(st);
  advance(self);
}

void on_loss(lockstep_self self, loss_data in) {
  stage_core& c = self->state.core;
  if (!c.loss.answered_by(in.s.micro_batch) || in.s.phase != c.phase.plan.phase) return;
  c.loss.awaiting = false;
  try {
    bool slowed = false;
    stage::backward_result r =
        timed_backward(c, c.loss.logits, activation{in.dlogits, {}}, c.loss.id, slowed,
                       c.ctx.fg ? nullptr : ahead_sender(self, c, c.loss.id, c.phase.tick));
    count_slowed(self, c, slowed);
    after_backward(self, c, r, c.loss.id);
    c.loss.logits = activation{};
    if (!c.ctx.fg)
      send_backward(self, c.loss.id, c.phase.tick, r.input, r.input_grad);  // forward gradients: none
    end_tick(self);
  } catch (const std::exception& e) {
    return fail_with(self, c, e, in.s.micro_batch);
  }
  advance(self);
}

void resume_from(lockstep_self self, const cut_part& part) {
  stage_core& c = self->state.core;
  const std::string where = "stage " + std::to_string(c.ctx.index + 1) + "'s part of the cut before tick " +
                            std::to_string(part.tick);
  stage_cut cut = decode_stage_cut(part.tensors, part.meta, static_cast<std::size_t>(c.ctx.index), where);
  if (cut.async.present) throw std::invalid_argument(where + " was taken by the async runtime");
  restore_stage_cut(*c.ctx.compute, *c.ctx.device, cut);
  if (c.ctx.fg) c.ctx.fg->restore(cut.state);  // a migrated stage's auxiliary head (no cut holds one else)
  self->state.resume = std::move(cut);
}

void skip_loss(lockstep_self self) {
  stage_core& c = self->state.core;
  c.loss.drop();
  send_backward(self, -1, c.phase.tick, {}, {});
  end_tick(self);
}

stage_status status_of(const lockstep_state& st) {
  const stage_core& c = st.core;
  stage_status s;
  s.stage = c.ctx.index;
  s.in_phase = c.phase.running;
  s.tick = c.phase.tick;
  s.completed = c.is_first() ? c.phase.backwards : 0;
  s.backwards = c.phase.backwards;
  s.evals = c.phase.evals;
  s.waiting_forward =
      c.phase.running && needs_forward(c, c.phase.tick) && st.forwards.count(c.phase.tick) == 0;
  s.waiting_backward =
      c.ctx.fg ? fg_waiting_derivatives(st)
               : c.phase.running && needs_backward(c, c.phase.tick) && st.backwards.count(c.phase.tick) == 0;
  return s;
}

}  // namespace petra::detail
