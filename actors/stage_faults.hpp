// Fault injection on a stage's outgoing messages and its compute (DESIGN.md §6), on a phase's
// first attempt only, so that a replay after a rollback runs clean.
#pragma once

#include <thread>

#include "actors/stage_actor_state.hpp"

namespace petra::detail {

inline bool chance(stage_actor_state& st, double p) {
  return p > 0 && std::uniform_real_distribution<double>(0, 1)(st.fault_rng) < p;
}

/// Sends one message on a link, applying the faults of this stage (first attempt only). In
/// lockstep a link delay is in the stamp (ticks); in async it is time.
template <class Handle, class Message>
void emit(self_ptr self, const Handle& to, Message msg, int64_t link_delay_ms) {
  auto& st = self->state;
  if (!st.faults_on()) {
    self->send(to, std::move(msg));
    return;
  }
  const bool marker = msg.s.micro_batch < 0;
  if (!marker && chance(st, st.faults.drop)) {
    ++st.events.injected_drops;
    return;
  }
  const int copies = !marker && chance(st, st.faults.duplicate) ? 2 : 1;
  if (copies == 2) ++st.events.injected_duplicates;
  int64_t delay_ms = st.lockstep() ? 0 : link_delay_ms;
  if (!st.lockstep() && st.faults.jitter_ms > 0)
    delay_ms += std::uniform_int_distribution<int64_t>(0, st.faults.jitter_ms)(st.fault_rng);
  if (!st.lockstep() && !marker && chance(st, st.faults.reorder)) {
    delay_ms += 1 + std::uniform_int_distribution<int64_t>(0, 19)(st.fault_rng);  // later messages overtake it
    ++st.events.injected_reorders;
  }
  for (int i = 0; i < copies; ++i) {
    if (delay_ms > 0) {
      ++st.events.injected_delays;
      self->delayed_send(to, std::chrono::milliseconds(delay_ms), msg);
    } else {
      self->send(to, msg);
    }
  }
}

/// Runs a computation, counts it as busy time, and slows it down when asked to.
template <class F>
auto timed(stage_actor_state& st, F&& f) {
  const auto t0 = clock_type::now();
  auto out = f();
  const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (st.faults_on() && st.faults.slow > 1)
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds * (st.faults.slow - 1)));
  st.busy_seconds += std::chrono::duration<double>(clock_type::now() - t0).count();
  return out;
}

inline void maybe_crash(stage_actor_state& st) {
  if (st.faults_on() && st.faults.crash_at_tick >= 0 && st.tick == st.faults.crash_at_tick) {
    ++st.events.injected_crashes;
    throw std::runtime_error("injected crash (faults.crash_at_tick)");
  }
}

}  // namespace petra::detail
