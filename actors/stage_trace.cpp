// The stage actor's timeline.
#include "actors/stage_trace.hpp"

#include "actors/stage_core.hpp"

namespace petra::detail {
namespace {

/// The timeline's flows carry the sending stage: the loader and the loss actor have their own numbers.
constexpr int loader_flow_stage = 511;
int loss_flow_stage(const stage_core& c) { return c.links.count; }

training::trace_recorder* tracer(stage_core& c, int64_t id) {
  training::trace_recorder* t = c.ctx.trace.get();
  return t && t->records(id) ? t : nullptr;
}

}  // namespace

void open_timeline(stage_core& c) {
  c.timeline.idle = false;
  if (c.ctx.trace && !c.timeline.track.valid())
    c.timeline.track = c.ctx.trace->track(c.ctx.process, "stage " + std::to_string(c.ctx.index + 1));
}

void trace_forward(stage_core& c, int64_t id, clock_type::time_point begin, clock_type::time_point end) {
  end_idle(c, begin);
  c.timeline.last_micro_batch = id;
  auto* t = tracer(c, id);
  if (!t) return;
  const training::trace_track track = c.timeline.track;
  const int j = c.ctx.index;
  t->span(track, "forward", begin, end, id, {{"micro_batch", id}, {"stage_tick", c.tick}});
  t->flow_in(track,
             training::trace_flow_id(training::flow_kind::forward, j > 0 ? j - 1 : loader_flow_stage, id, id),
             begin, id);
  t->flow_out(track, training::trace_flow_id(training::flow_kind::forward, j, id, id),
              begin + (end - begin) / 2, id);
  t->counter(track, "fifo", end, id, static_cast<double>(c.ctx.compute->outstanding()));
}

void trace_backward(stage_core& c, const stage::backward_result& r, int64_t id, clock_type::time_point begin,
                    clock_type::time_point end) {
  end_idle(c, begin);
  c.timeline.last_micro_batch = id;
  auto* t = tracer(c, id);
  if (!t) return;
  const training::trace_track track = c.timeline.track;
  const int j = c.ctx.index;
  const int from = c.is_last() ? loss_flow_stage(c) : j + 1;
  t->span(track, "rebuild + backward", begin, r.stepped ? r.step_begin : end, id,
          {{"micro_batch", id}, {"staleness", c.ctx.compute->weight_version() - r.forward_version}});
  if (r.stepped)
    t->span(track, "optimizer step", r.step_begin, r.step_end, id,
            {{"step", c.ctx.compute->weight_version()}});
  t->flow_in(track, training::trace_flow_id(training::flow_kind::backward, from, id, id), begin, id);
  if (j > 0)
    t->flow_out(track, training::trace_flow_id(training::flow_kind::backward, j, id, id),
                begin + (end - begin) / 2, id);
  t->counter(track, "fifo", end, id, static_cast<double>(c.ctx.compute->outstanding()));
}

void trace_evaluate(stage_core& c, int64_t index, clock_type::time_point begin, clock_type::time_point end) {
  const int64_t id = c.timeline.last_micro_batch;
  if (auto* t = tracer(c, id)) t->span(c.timeline.track, "evaluate", begin, end, id, {{"batch", index}});
}

void trace_hand_over(stage_core& c, int64_t id, clock_type::time_point begin) {
  if (auto* t = tracer(c, id))
    t->span(c.timeline.track, "hand-over", begin, clock_type::now(), id, {{"micro_batch", id}});
}

void mark_idle(stage_core& c, bool for_input) {
  if (c.timeline.idle || !c.in_phase) return;
  c.timeline.idle = true;
  c.timeline.waits_for_input = for_input;
  c.timeline.idle_since = c.timeline.counted_until = clock_type::now();
}

void split_idle(stage_core& c, clock_type::time_point now) {
  stage_timeline& tl = c.timeline;
  if (!tl.idle || now <= tl.counted_until) return;
  (tl.waits_for_input ? c.wait_input_seconds : c.wait_gradient_seconds) +=
      std::chrono::duration<double>(now - tl.counted_until).count();
  tl.counted_until = now;
}

void end_idle(stage_core& c, clock_type::time_point now) {
  stage_timeline& tl = c.timeline;
  if (!tl.idle) return;
  split_idle(c, now);
  tl.idle = false;
  if (auto* t = tracer(c, tl.last_micro_batch))
    t->span(tl.track, tl.waits_for_input ? "wait for input" : "wait for gradient", tl.idle_since, now,
            tl.last_micro_batch);
}

void trace_mailbox(stage_core& c, std::size_t waiting) {
  const int64_t id = c.timeline.last_micro_batch;
  if (auto* t = tracer(c, id))
    t->counter(c.timeline.track, "mailbox", clock_type::now(), id, static_cast<double>(waiting));
}

}  // namespace petra::detail
