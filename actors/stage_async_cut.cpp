// Snapshots of the async protocol without a drain (docs/design.md §4): Chandy–Lamport markers. The
// loader sends the cut's marker behind the last message before it; each stage, when the marker
// reaches it on its forward link, takes its part (state, queues, the output awaiting the loss),
// passes the marker on along both links, and records what arrives on its backward link (and,
// at the last stage, the loss actor's answer) until the next stage's marker comes back.
#include "actors/stage_async_cut.hpp"

#include "training/snapshot.hpp"

namespace petra::detail {

/// In async every stamp carries tick −1: a message with a tick and nothing else is a cut's marker.
bool is_marker(const forward_data& f) { return f.s.tick >= 0 && !f.x.defined() && f.eval_index < 0; }
bool is_marker(const backward_data& b) { return b.s.tick >= 0 && !b.grad.defined(); }

/// A part is whole once the next stage's marker came back (and the awaited loss answer came):
/// whole parts go to the coordinator in marker order, each followed by the epoch reports this
/// stage made after it and before the next cut (the coordinator counts a report in a cut when it
/// comes before the producer's part of it).
void maybe_send_cut(async_self self) {
  async_state& st = self->state;
  stage_core& c = st.core;
  while (!st.cuts.empty()) {
    async_state::pending_cut& front = st.cuts.front();
    const cut_backward& loss = front.part.async.loss;
    if (front.waits_backward || (loss.id >= 0 && !loss.grad.x1.defined())) return;
    encoded_stage_cut e = encode_stage_cut(front.part);
    self->send(c.out.links.coordinator, cut_part{c.ctx.index, front.tick, c.phase.plan.phase,
                                                 std::move(e.tensors), std::move(e.meta)});
    auto after = st.cuts.size() > 1 ? std::move(front.reports_after) : c.out.take_held();
    for (stage_epoch_report& r : after) self->send(c.out.links.coordinator, std::move(r));
    st.cuts.pop_front();
  }
  c.out.stop_holding();
}

/// The marker of the cut before tick t came on the forward link: the stage's state, its queues and
/// the output awaiting the loss make its part; the marker goes on along both links (to the loss
/// actor at the last stage), and the backward link is recorded until the marker comes back on it.
bool can_take_cut(const async_state& st) { return st.core.ctx.compute->can_export_inflight(); }

void take_cut(async_self self, int64_t t, std::size_t queued_before) {
  async_state& st = self->state;
  stage_core& c = st.core;
  stage_cut part = cut_stage(*c.ctx.compute, *c.ctx.device);
  async_cut& a = part.async;
  a.present = true;
  a.forwards_done = c.phase.tick;
  a.backwards_done = c.phase.backwards;
  a.evals_done = c.phase.evals;
  for (std::size_t i = 0; i < queued_before && i < st.forwards.size(); ++i) {
    forward_data& f = st.forwards[i];
    cut_queued q;
    q.id = f.s.micro_batch;
    if (f.x.defined()) q.x = c.work.on_host(f.x);
    if (f.eval_index >= 0) {
      q.eval.epoch = f.eval_epoch, q.eval.index = f.eval_index;
      q.eval.images = c.work.on_host(f.eval_x);
    }
    a.forwards.push_back(std::move(q));
  }
  for (auto& [id, b] : st.backwards)
    a.backwards.push_back(cut_backward{id, c.work.on_host(b.rebuilt), c.work.on_host(b.grad)});
  if (c.loss.awaiting) {
    a.loss.id = c.loss.id;
    a.loss.rebuilt = c.work.on_host(c.loss.logits);
  }
  std::vector<stage_epoch_report> before = c.out.hold();  // epoch reports wait behind this part
  if (!st.cuts.empty()) st.cuts.back().reports_after = std::move(before);
  st.cuts.push_back(async_state::pending_cut{std::move(part), t, !c.is_last(), {}});
  const stamp marker = c.stamp_for(-1, t);
  if (c.is_last())
    self->send(c.out.links.loss, cut_marker{t});
  else
    self->send(c.out.links.next, forward_data{marker, {}});
  if (!c.is_first()) self->send(c.out.links.prev, backward_data{marker, {}, {}});
  maybe_send_cut(self);
}

void on_backward_marker(async_self self, int64_t tick) {
  for (auto& cut : self->state.cuts)
    if (cut.tick == tick) cut.waits_backward = false;
  maybe_send_cut(self);
}

void record_backward(async_self self, backward_data& in) {
  async_state& st = self->state;
  std::optional<cut_backward> copy;  // sent before the next stage's part: in flight across the cut
  for (auto& cut : st.cuts) {
    if (!cut.waits_backward) continue;
    if (!copy)
      copy = cut_backward{in.s.micro_batch, st.core.work.on_host(in.rebuilt), st.core.work.on_host(in.grad)};
    cut.part.async.backwards.push_back(*copy);
  }
}

void record_loss_answer(async_self self, loss_data& in) {
  async_state& st = self->state;
  for (auto& cut : st.cuts) {  // the answer a cut awaited
    cut_backward& loss = cut.part.async.loss;
    if (loss.id != in.s.micro_batch || loss.grad.x1.defined()) continue;
    activation answer{in.dlogits, {}};
    loss.grad = st.core.work.on_host(answer);
    in.dlogits = answer.x1;
  }
  maybe_send_cut(self);
}

std::optional<loss_data> restore_queues(async_self self, const phase_plan& plan) {
  async_state& st = self->state;
  stage_core& c = st.core;
  std::optional<loss_data> answer;
  if (!st.resume) return answer;
  const async_cut& a = st.resume->async;
  const int32_t j = c.ctx.index;
  c.phase.tick = a.forwards_done;
  c.phase.backwards = a.backwards_done;
  c.phase.evals = a.evals_done;
  for (const cut_queued& q : a.forwards) {
    forward_data f{stamp{q.id, -1, 0, j - 1, plan.phase}, q.x};
    if (q.eval.index >= 0) f.eval_epoch = q.eval.epoch, f.eval_index = q.eval.index, f.eval_x = q.eval.images;
    if (q.id >= 0) st.seen_forward.insert(q.id);
    st.forwards.push_back(std::move(f));
  }
  for (const cut_backward& b : a.backwards) {
    st.seen_backward.insert(b.id);
    st.backwards.emplace(b.id, backward_data{stamp{b.id, -1, 0, j + 1, plan.phase}, b.rebuilt, b.grad});
  }
  if (a.loss.id >= 0) {
    c.loss.hold(c.work.take_in(a.loss.rebuilt), a.loss.id);
    answer = loss_data{stamp{a.loss.id, -1, 0, -1, plan.phase}, a.loss.grad.x1};
  }
  return answer;
}

void resume_from(async_self self, const cut_part& part) {
  stage_core& c = self->state.core;
  const std::string where = "stage " + std::to_string(c.ctx.index + 1) + "'s part of the cut before tick " +
                            std::to_string(part.tick);
  stage_cut cut = decode_stage_cut(part.tensors, part.meta, static_cast<std::size_t>(c.ctx.index), where);
  if (!cut.async.present) throw std::invalid_argument(where + " was taken by the lockstep runtime");
  restore_stage_cut(*c.ctx.compute, *c.ctx.device, cut);
  if (c.ctx.fg) c.ctx.fg->restore(cut.state);  // a migrated stage's auxiliary head (no cut holds one else)
  self->state.resume = std::move(cut);
}

}  // namespace petra::detail
