// The stage actors' shared steps.
#include "actors/stage_core.hpp"

#include <algorithm>
#include <thread>

namespace petra::detail {

bool slow_down(const stage_core& c, clock_type::time_point begin) {
  if (!c.faults_on() || c.faults.slow <= 1) return false;
  const double seconds = std::chrono::duration<double>(clock_type::now() - begin).count();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds * (c.faults.slow - 1)));
  return true;
}

void begin_phase(stage_core& c, const phase_plan& plan) {
  c.plan = plan;
  c.tick = 0;
  c.in_phase = true;
  c.awaiting_loss = false;
  c.evals_done = 0;
  c.backwards_in_phase = 0;
  c.fault_events = 0;
  c.last_forwarded = -1;
  c.epoch_reported = -1;
  c.ahead.clear();
  c.recovery.restart();
  c.record.begin_phase(clock_type::now());
  c.timeline.open(c.ctx.trace, c.ctx.process, c.ctx.index);
}

activation timed_forward(stage_core& c, const activation& x, int64_t id, bool& slowed) {
  clock_type::time_point begin, end;
  activation out =
      timed(c, slowed, begin, end, [&] { return c.ctx.compute->forward(take_in(c, x), id, c.tick); });
  trace_forward(c, id, begin, end);
  return out;
}

stage::backward_result timed_backward(stage_core& c, const activation& rebuilt, const activation& grad,
                                      int64_t id, bool& slowed,
                                      const std::function<void(const activation&)>& input_ready) {
  clock_type::time_point begin, end;
  stage::backward_result r = timed(c, slowed, begin, end, [&] {
    return c.ctx.compute->backward(take_in(c, rebuilt), take_in(c, grad), id, c.tick, input_ready);
  });
  ++c.backwards_in_phase;
  trace_backward(c, r, id, begin, end);
  return r;
}

bool is_sent_ahead(const backward_data& b) { return b.rebuilt.defined() && !b.grad.defined(); }

void take_ahead(stage_core& c, backward_data in) {
  if (!c.ctx.compute->overlaps_rebuild() || classify(c, in.s) != arrival::current) return;  // of no use
  c.ahead.keep(in.s.micro_batch, std::move(in.rebuilt));
  try_rebuild_ahead(c);
}

void try_rebuild_ahead(stage_core& c) {
  c.ahead.start_next(*c.ctx.compute, [&c](const activation& a) { return take_in(c, a); });
}

stage_report make_report(stage_core& c) {
  stage_report r = stage_report::of(*c.ctx.compute);
  c.record.fill(r, c.timeline, clock_type::now());
  r.fault_events = c.fault_events;
  return r;
}

stage_report take_epoch_report(stage_core& c) {
  stage_report r = make_report(c);
  c.ctx.compute->reset_stats();
  c.window.restart();
  c.record.restart_epoch(c.timeline, clock_type::now());
  return r;
}

void continue_record(stage_core& c, const stage_report& earlier) {
  c.ctx.compute->continue_stats(earlier.stats);
  c.window.take(*c.ctx.compute);  // the next window holds this actor's steps only, as before a move
  c.record.continue_from(earlier, c.timeline, clock_type::now());
}

activation timed_evaluate(stage_core& c, const activation& x, int64_t index) {
  const auto begin = clock_type::now();
  activation y = c.ctx.compute->evaluate(take_in(c, x));
  const auto end = clock_type::now();
  c.record.add_busy(std::chrono::duration<double>(end - begin).count());
  c.timeline.evaluate(index, begin, end);
  return y;
}

arrival classify(const stage_core& c, const stamp& s) {
  // Generations only grow: a newer one is a rebuilt neighbour whose wiring is on its way here.
  const int32_t j = c.ctx.index;
  if ((s.sender == j - 1 && s.generation < c.links.prev_generation) ||
      (s.sender == j + 1 && s.generation < c.links.next_generation))
    return arrival::fenced;
  if (s.phase > c.plan.phase) return arrival::early;
  if (s.phase < c.plan.phase || !c.in_phase) return arrival::stale;
  return arrival::current;
}

activation take_in(stage_core& c, const activation& x) {
  return {c.ctx.device->import(x.x1), c.ctx.device->import(x.x2)};
}

activation on_host(stage_core& c, activation& a) {
  a = take_in(c, a);  // once: the stage then uses the same tensors
  return {a.x1.defined() ? c.ctx.device->to_host(a.x1) : tensor{},
          a.x2.defined() ? c.ctx.device->to_host(a.x2) : tensor{}};
}

activation hand_out(stage_core& c, const activation& x, const device& consumer, int64_t id) {
  const auto begin = clock_type::now();
  activation out{c.ctx.device->export_for(x.x1, consumer), c.ctx.device->export_for(x.x2, consumer)};
  if (c.ctx.device->where().type == device_type::cpu) return out;  // a handle: nothing to show
  c.timeline.hand_over(id, begin, clock_type::now());
  return out;
}

}  // namespace petra::detail
