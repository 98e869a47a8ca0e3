// The async protocol.
#include "actors/stage_async.hpp"

#include <algorithm>

#include "actors/fg_faults.hpp"
#include "actors/fg_lockstep.hpp"
#include "actors/stage_async_cut.hpp"

namespace petra::detail {
namespace {

void note_mailbox(async_state& st) {
  const auto waiting = static_cast<int64_t>(st.forwards.size() + st.backwards.size());
  st.core.work.record.saw_mailbox(waiting);
  st.core.work.timeline.mailbox(static_cast<std::size_t>(waiting), clock_type::now());
}

/// An evaluation batch: it carries no training activation, only the test images' eval_x.
bool is_eval_batch(const forward_data& f) { return !f.x.defined() && f.eval_index >= 0; }

/// The backward result of micro-batch `id` goes upstream; at stage 1 the micro-batch is finished
/// and its credit returns to the loader.
void send_backward(async_self self, int64_t id, const activation& rebuilt, const activation& grad) {
  async_state& st = self->state;
  stage_core& c = st.core;
  if (!c.is_first()) {
    emit(self, c, c.out.links.prev,
         backward_data{c.stamp_for(id, -1), c.work.hand_out(rebuilt, c.out.links.prev_device, id),
                       c.work.hand_out(grad, c.out.links.prev_device, id)},
         c.faults.backward_delay);
    return;
  }
  ++st.completed;
  self->send(c.out.links.loader, credit_return{1, c.phase.plan.phase, id});
}

/// One unit of work, backward first (in this stage's FIFO order). False when idle or waiting for the loss.
bool run_step(async_self self) {
  async_state& st = self->state;
  stage_core& c = st.core;
  if (c.ctx.fg) return fg_run_step(self);  // training.method forward_gradient
  auto b = st.backwards.find(c.ctx.compute->next_backward_id());
  if (b != st.backwards.end()) {
    backward_data in = std::move(b->second);
    st.backwards.erase(b);
    bool slowed = false;
    stage::backward_result r = timed_backward(c, in.rebuilt, in.grad, in.s.micro_batch, slowed,
                                              ahead_sender(self, c, in.s.micro_batch, -1));
    count_slowed(self, c, slowed);
    after_backward(self, c, r, in.s.micro_batch);
    send_backward(self, in.s.micro_batch, r.input, r.input_grad);
    return true;
  }
  if (st.forwards.empty()) return false;
  if (is_marker(st.forwards.front())) {  // a cut that waited for a backprop tape to end
    if (!can_take_cut(st)) return false;
    const int64_t t = st.forwards.front().s.tick;
    st.forwards.pop_front();
    // What the queue holds now came after the marker: none of it is in the part.
    if (t > c.recovery.abandoned_cuts) take_cut(self, t, 0);
    return true;
  }
  // Pacing by stages: a training forward waits while the stage's window of micro-batches awaiting
  // backward is full (evaluation batches await none).
  if (!is_eval_batch(st.forwards.front()) && c.ctx.stage_window > 0 &&
      static_cast<int64_t>(c.ctx.compute->outstanding()) >= c.ctx.stage_window)
    return false;
  forward_data in = std::move(st.forwards.front());
  st.forwards.pop_front();
  if (is_eval_batch(in)) {  // on to the next stage, or to the loss
    forward_data out;
    out.s = c.stamp_for(-1, -1);
    out.eval_epoch = in.eval_epoch, out.eval_index = in.eval_index;
    out.eval_x = evaluate_batch(self, c, in.eval_epoch, in.eval_index, in.eval_x);
    if (!c.is_last()) emit(self, c, c.out.links.next, std::move(out), c.faults.forward_delay);
    return true;
  }
  maybe_crash(c);
  const int64_t id = in.s.micro_batch;
  bool slowed = false;
  activation out = timed_forward(c, in.x, id, slowed);
  count_slowed(self, c, slowed);
  ++c.phase.tick;  // async "ticks" count this stage's forwards: the delay is in forwards
  c.phase.last_forwarded = std::max(c.phase.last_forwarded, id);  // a re-issue comes after higher ids
  if (c.is_last()) {  // the backward follows when the loss actor answers
    c.loss.hold(out, id);
    self->send(c.out.links.loss, logits_data{c.stamp_for(id, -1), c.work.hand_out(out, device{}, id).x1});
    return false;
  }
  emit(self, c, c.out.links.next,
       forward_data{c.stamp_for(id, -1), c.work.hand_out(out, c.out.links.next_device, id)},
       c.faults.forward_delay);
  return true;
}

}  // namespace

void advance(async_self self) {
  async_state& st = self->state;
  stage_core& c = st.core;
  if (!c.phase.running || c.loss.awaiting || c.recovery.held) return;
  try {
    while (run_step(self)) {
    }
    // Until the next message (or the loss) arrives. A window full of micro-batches awaiting backward
    // waits for a gradient whether or not a forward is queued (at stage 1 the window is the run's
    // credits: the loader sends nothing either); below it, an empty queue waits for input.
    const bool window_full =
        c.ctx.stage_window > 0 && static_cast<int64_t>(c.ctx.compute->outstanding()) >= c.ctx.stage_window;
    mark_idle(c, !c.loss.awaiting && !window_full && st.forwards.empty());
    // Every micro-batch of the phase passes each stage's backward once, and every evaluation batch
    // its evaluation: then this stage is done.
    if (!c.loss.awaiting && c.phase.all_passed()) finish_phase(self, c);
  } catch (const std::exception& e) {
    fail_with(self, c, e, -1);
  }
}

void on_plan(async_self self, const phase_plan& plan) {
  async_state& st = self->state;
  stage_core& c = st.core;
  begin_phase(c, plan);
  st.forwards.clear();
  st.backwards.clear();
  st.derivatives.clear();
  st.seen_forward.clear();
  st.seen_backward.clear();
  st.completed = 0;
  st.cuts.clear();
  // Resuming from a cut: its counts and queues (and the loss answer it recorded, run last).
  std::optional<loss_data> answer = plan.start_tick > 0 ? restore_queues(self, plan) : std::nullopt;
  st.resume.reset();
  stage_inbox::early early = c.inbox.take();
  for (auto& f : early.forwards) on_forward(self, std::move(f));
  for (auto& b : early.backwards) on_backward(self, std::move(b));
  if (answer)
    on_loss(self, std::move(*answer));
  else
    advance(self);
}

void on_forward(async_self self, forward_data in) {
  async_state& st = self->state;
  if (!admit(self, st.core, in)) return;
  if (is_marker(in)) {
    if (in.s.tick <= st.core.recovery.abandoned_cuts) return;
    const bool marker_waits = std::any_of(st.forwards.begin(), st.forwards.end(),
                                          [](const forward_data& f) { return is_marker(f); });
    if (!can_take_cut(st) || marker_waits) {
      st.forwards.push_back(std::move(in));  // taken in order once the live tape has ended
      return;
    }
    try {
      take_cut(self, in.s.tick, st.forwards.size());
    } catch (const std::exception& e) {
      fail_with(self, st.core, e, -1);
    }
    return;
  }
  if (st.core.recovery.forgotten(in.s.micro_batch)) {  // lost in a stage-local recovery
    if (!st.core.recovery.readmit(in.s.micro_batch)) return;
    st.seen_forward.erase(in.s.micro_batch);  // its re-issue: new to this stage from here on
    st.seen_backward.erase(in.s.micro_batch);
  }
  // (Evaluation batches are never duplicated: faults spare messages without a micro-batch.)
  if (in.s.micro_batch >= 0 && !st.seen_forward.insert(in.s.micro_batch))
    return report_fault(self, st.core, fault_kind::duplicate_discarded);
  st.forwards.push_back(std::move(in));
  note_mailbox(st);
  advance(self);
}

void on_backward(async_self self, backward_data in) {
  async_state& st = self->state;
  if (is_sent_ahead(in)) return take_ahead(st.core, std::move(in));  // no link's message: nothing to record
  if (!admit(self, st.core, in)) return;
  if (is_marker(in)) {  // the next stage took its part of the cut: the link's recording ends
    if (in.s.tick <= st.core.recovery.abandoned_cuts) return;
    on_backward_marker(self, in.s.tick);
    return;
  }
  if (st.core.recovery.forgotten(in.s.micro_batch)) return;
  if (!st.seen_backward.insert(in.s.micro_batch))
    return report_fault(self, st.core, fault_kind::duplicate_discarded);
  try {
    record_backward(self, in);
  } catch (const std::exception& e) {
    return fail_with(self, st.core, e, in.s.micro_batch);
  }
  st.backwards.emplace(in.s.micro_batch, std::move(in));
  note_mailbox(st);
  self->send(self, process_atom_v);  // forwards already in the mailbox queue up first; this backward then
                                     // runs ahead of them
}

void on_loss(async_self self, loss_data in) {
  stage_core& c = self->state.core;
  if (!c.loss.answered_by(in.s.micro_batch) || in.s.phase != c.phase.plan.phase ||
      c.recovery.forgotten(in.s.micro_batch))
    return;
  c.loss.awaiting = false;
  try {
    record_loss_answer(self, in);
    bool slowed = false;
    stage::backward_result r = timed_backward(c, c.loss.logits, activation{in.dlogits, {}}, c.loss.id, slowed,
                                              c.ctx.fg ? nullptr : ahead_sender(self, c, c.loss.id, -1));
    count_slowed(self, c, slowed);
    after_backward(self, c, r, c.loss.id);
    c.loss.logits = activation{};
    if (!c.ctx.fg || c.is_first())  // forward gradients send nothing upstream (J = 1: the credit)
      send_backward(self, c.loss.id, r.input, r.input_grad);
    else if (returns_credits(c))  // greedy local learning: the credit comes back from here
      self->send(c.out.links.loader, credit_return{1, c.phase.plan.phase, c.loss.id});
  } catch (const std::exception& e) {
    return fail_with(self, c, e, in.s.micro_batch);
  }
  advance(self);
}

stage_status status_of(const async_state& st) {
  const stage_core& c = st.core;
  stage_status s;
  s.stage = c.ctx.index;
  s.in_phase = c.phase.running;
  s.tick = c.phase.tick;
  s.completed = st.completed;
  s.backwards = c.phase.backwards;
  s.evals = c.phase.evals;
  s.waiting_forward = c.phase.running && st.forwards.empty() && !c.loss.awaiting;
  const int64_t next = c.ctx.compute->next_backward_id();
  s.waiting_backward = c.phase.running && c.ctx.compute->outstanding() > 0 &&
                       (c.ctx.fg ? st.derivatives.count(next) : st.backwards.count(next)) == 0 &&
                       !c.loss.awaiting;
  return s;
}

}  // namespace petra::detail
