// The stage actors' shared steps.
#include "actors/stage_core.hpp"

#include <thread>

namespace petra::detail {
namespace {

/// An exception that is an injected crash (faults.crash_at_tick), told apart by its type.
struct injected_crash : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs a computation, counts it as busy time, and slows it down when faults.slow asks to;
/// [begin, end] is when it ran.
template <class F>
auto timed(stage_core& c, bool& slowed, clock_type::time_point& begin, clock_type::time_point& end, F&& f) {
  begin = clock_type::now();
  auto out = f();
  const double seconds = std::chrono::duration<double>(clock_type::now() - begin).count();
  slowed = c.faults_on() && c.faults.slow > 1;
  if (slowed) std::this_thread::sleep_for(std::chrono::duration<double>(seconds * (c.faults.slow - 1)));
  end = clock_type::now();
  c.busy_seconds += std::chrono::duration<double>(end - begin).count();
  return out;
}

/// The timeline's flows carry the sending stage: the loader and the loss actor have their own numbers.
constexpr int loader_flow_stage = 511;
int loss_flow_stage(const stage_core& c) { return c.links.count; }

training::trace_recorder* tracer(stage_core& c, int64_t id) {
  training::trace_recorder* t = c.ctx.trace.get();
  return t && t->records(id) ? t : nullptr;
}

/// A wait for input ends: its span on the timeline.
void end_idle(stage_core& c, clock_type::time_point now) {
  if (!c.idle) return;
  c.idle = false;
  if (auto* t = tracer(c, c.last_micro_batch))
    t->span(c.track, "wait for input", c.idle_since, now, c.last_micro_batch);
}

}  // namespace

void begin_phase(stage_core& c, const phase_plan& plan) {
  c.plan = plan;
  c.tick = 0;
  c.in_phase = true;
  c.awaiting_loss = false;
  c.evals_done = 0;
  c.backwards_in_phase = 0;
  c.drop_upto = c.last_forwarded = c.abandoned_cuts = -1;
  c.quiet_forward_below = c.quiet_backward_below = -1;
  c.cancelled.clear();
  c.phase_start = clock_type::now();
  if (c.epoch_start == clock_type::time_point{}) c.epoch_start = c.phase_start;
  c.idle = false;
  if (c.ctx.trace && !c.track.valid())
    c.track = c.ctx.trace->track(c.ctx.process, "stage " + std::to_string(c.ctx.index + 1));
}

recovery_order hold_stage(stage_core& c, const std::function<bool(int64_t)>& held_backward) {
  c.held = true;
  recovery_order out;
  if (!c.in_phase) return out;
  out.phase = c.plan.phase;
  out.drop_upto = c.last_forwarded;
  out.forwards_done = c.tick;
  out.backwards_done = c.backwards_in_phase;
  out.evals_done = c.evals_done;
  out.tick = c.tick;
  for (int64_t id : c.ctx.compute->outstanding_ids())
    if (!held_backward(id)) out.cancel.push_back(id);  // its backward was in (or behind) the lost stages
  return out;
}

std::vector<int64_t> forget_lost(stage_core& c, const recovery_order& order) {
  if (!c.in_phase || order.phase != c.plan.phase)
    throw std::invalid_argument("a recovery order for phase " + std::to_string(order.phase) +
                                (c.in_phase ? ", the stage runs phase " + std::to_string(c.plan.phase)
                                            : std::string(", the stage is between phases")));
  c.cancelled.insert(order.cancel.begin(), order.cancel.end());
  c.drop_upto = std::max(c.drop_upto, order.drop_upto);
  return c.ctx.compute->drop([&](int64_t id) { return c.forgotten(id); });
}

activation timed_forward(stage_core& c, const activation& x, int64_t id, bool& slowed) {
  clock_type::time_point begin, end;
  activation out =
      timed(c, slowed, begin, end, [&] { return c.ctx.compute->forward(take_in(c, x), id, c.tick); });
  end_idle(c, begin);
  c.last_micro_batch = id;
  if (auto* t = tracer(c, id)) {
    const int j = c.ctx.index;
    t->span(c.track, "forward", begin, end, id, {{"micro_batch", id}, {"stage_tick", c.tick}});
    t->flow_in(
        c.track,
        training::trace_flow_id(training::flow_kind::forward, j > 0 ? j - 1 : loader_flow_stage, id, id),
        begin, id);
    t->flow_out(c.track, training::trace_flow_id(training::flow_kind::forward, j, id, id),
                begin + (end - begin) / 2, id);
    t->counter(c.track, "fifo", end, id, static_cast<double>(c.ctx.compute->outstanding()));
  }
  return out;
}

stage::backward_result timed_backward(stage_core& c, const activation& rebuilt, const activation& grad,
                                      int64_t id, bool& slowed) {
  clock_type::time_point begin, end;
  stage::backward_result r = timed(c, slowed, begin, end, [&] {
    return c.ctx.compute->backward(take_in(c, rebuilt), take_in(c, grad), id, c.tick);
  });
  end_idle(c, begin);
  c.last_micro_batch = id;
  ++c.backwards_in_phase;
  if (auto* t = tracer(c, id)) {
    const int j = c.ctx.index;
    const int from = c.is_last() ? loss_flow_stage(c) : j + 1;
    t->span(c.track, "rebuild + backward", begin, r.stepped ? r.step_begin : end, id,
            {{"micro_batch", id}, {"staleness", c.ctx.compute->weight_version() - r.forward_version}});
    if (r.stepped)
      t->span(c.track, "optimizer step", r.step_begin, r.step_end, id,
              {{"step", c.ctx.compute->weight_version()}});
    t->flow_in(c.track, training::trace_flow_id(training::flow_kind::backward, from, id, id), begin, id);
    if (j > 0)
      t->flow_out(c.track, training::trace_flow_id(training::flow_kind::backward, j, id, id),
                  begin + (end - begin) / 2, id);
    t->counter(c.track, "fifo", end, id, static_cast<double>(c.ctx.compute->outstanding()));
  }
  return r;
}

void mark_idle(stage_core& c) {
  if (c.idle || !c.in_phase) return;
  c.idle = true;
  c.idle_since = clock_type::now();
}

void trace_mailbox(stage_core& c, std::size_t waiting) {
  if (auto* t = tracer(c, c.last_micro_batch))
    t->counter(c.track, "mailbox", clock_type::now(), c.last_micro_batch, static_cast<double>(waiting));
}

stage_report make_report(stage_core& c) {
  stage_report r = stage_report::of(*c.ctx.compute);
  r.mailbox_peak = c.mailbox_peak;
  r.busy_seconds = c.busy_seconds;
  r.wall_seconds = std::chrono::duration<double>(clock_type::now() - c.epoch_start).count();
  return r;
}

stage_report take_epoch_report(stage_core& c) {
  stage_report r = make_report(c);
  c.ctx.compute->reset_stats();
  c.window.restart();
  c.mailbox_peak = 0;
  c.busy_seconds = 0;
  c.epoch_start = clock_type::now();
  return r;
}

activation timed_evaluate(stage_core& c, const activation& x, int64_t index) {
  const auto begin = clock_type::now();
  activation y = c.ctx.compute->evaluate(take_in(c, x));
  const auto end = clock_type::now();
  c.busy_seconds += std::chrono::duration<double>(end - begin).count();
  if (auto* t = tracer(c, c.last_micro_batch))
    t->span(c.track, "evaluate", begin, end, c.last_micro_batch, {{"batch", index}});
  return y;
}

caf::error error_of(const std::exception& e) {
  const bool crash = dynamic_cast<const injected_crash*>(&e) != nullptr;
  return caf::make_error(crash ? petra_errc::injected_crash : petra_errc::stage_exception, e.what());
}

void maybe_crash(stage_core& c) {
  if (c.faults_on() && c.faults.crash_at_tick >= 0 && c.tick == c.faults.crash_at_tick)
    throw injected_crash("injected crash (faults.crash_at_tick)");
}

arrival classify(const stage_core& c, const stamp& s) {
  if (s.phase > c.plan.phase) return arrival::early;
  if (s.phase < c.plan.phase || !c.in_phase) return arrival::stale;
  return arrival::current;
}

int64_t arrival_tick(const stage_core& c, int64_t t, int64_t link_delay) {
  return t + 1 + (c.faults_on() ? link_delay : 0);
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
  if (auto* t = tracer(c, id))
    t->span(c.track, "hand-over", begin, clock_type::now(), id, {{"micro_batch", id}});
  return out;
}

}  // namespace petra::detail
