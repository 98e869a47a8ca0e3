// The stage actors' shared steps.
#include "actors/stage_core.hpp"

#include <thread>

namespace petra::detail {
namespace {

/// An exception that is an injected crash (faults.crash_at_tick), told apart by its type.
struct injected_crash : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs a computation, counts it as busy time, and slows it down when faults.slow asks to.
template <class F>
auto timed(stage_core& c, bool& slowed, F&& f) {
  const auto t0 = clock_type::now();
  auto out = f();
  const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  slowed = c.faults_on() && c.faults.slow > 1;
  if (slowed) std::this_thread::sleep_for(std::chrono::duration<double>(seconds * (c.faults.slow - 1)));
  c.busy_seconds += std::chrono::duration<double>(clock_type::now() - t0).count();
  return out;
}

}  // namespace

void begin_phase(stage_core& c, const phase_plan& plan) {
  c.plan = plan;
  c.tick = 0;
  c.in_phase = true;
  c.awaiting_loss = false;
  c.mailbox_peak = 0;
  c.busy_seconds = 0;
  c.phase_start = clock_type::now();
  c.ctx.compute->reset_stats();
}

activation timed_forward(stage_core& c, const activation& x, int64_t id, bool& slowed) {
  return timed(c, slowed, [&] { return c.ctx.compute->forward(take_in(c, x), id, c.tick); });
}

stage::backward_result timed_backward(stage_core& c, const activation& rebuilt, const activation& grad,
                                      int64_t id, bool& slowed) {
  return timed(c, slowed,
               [&] { return c.ctx.compute->backward(take_in(c, rebuilt), take_in(c, grad), id, c.tick); });
}

stage_report make_report(stage_core& c) {
  stage_report r = stage_report::of(*c.ctx.compute);
  r.mailbox_peak = c.mailbox_peak;
  r.busy_seconds = c.busy_seconds;
  r.wall_seconds = std::chrono::duration<double>(clock_type::now() - c.phase_start).count();
  return r;
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

activation hand_out(stage_core& c, const activation& x, const device& consumer) {
  return {c.ctx.device->export_for(x.x1, consumer), c.ctx.device->export_for(x.x2, consumer)};
}

}  // namespace petra::detail
