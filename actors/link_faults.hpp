// Fault injection at a stage actor (docs/design.md §6, private to actors/): its links drop, duplicate,
// delay, jitter and reorder what it sends, and the stage crashes at a tick; every injected fault
// is reported to the coordinator. Faults apply to a phase's first attempt only.
#pragma once

#include <caf/all.hpp>
#include <random>

#include "actors/stage_core.hpp"

namespace petra::detail {

/// The stage's faults, and its random draws seeded from the run's fault seed and the stage.
void arm_faults(stage_core& c, const stage_faults& f);

/// Throws the injected crash when faults.crash_at_tick names this tick (first attempt only).
void maybe_crash(stage_core& c);

/// The error a throwing stage quits with (injected crashes keep their code).
caf::error error_of(const std::exception& e);

/// Lockstep: the tick a message sent at tick t on a link with this delay is for.
int64_t arrival_tick(const stage_core& c, int64_t t, int64_t link_delay);

/// A computation threw: an injected crash is counted as a fault; either way the stage fails.
template <class Self>
void fail_with(Self* self, stage_core& c, const std::exception& e, int64_t micro_batch) {
  const caf::error err = error_of(e);
  if (has_code(err, petra_errc::injected_crash)) report_fault(self, c, fault_kind::crash);
  fail(self, c, err, e.what(), micro_batch);
}

/// Reports a slowed computation (faults.slow) as an injected fault.
template <class Self>
void count_slowed(Self* self, stage_core& c, bool slowed) {
  if (slowed) report_fault(self, c, fault_kind::slow);
}

inline bool chance(stage_core& c, double p) {
  return p > 0 && std::uniform_real_distribution<double>(0, 1)(c.fault_rng) < p;
}

/// faults.drop_burst: the next forward message is one of the burst (its count taken).
bool in_drop_burst(stage_core& c);

/// Sends one message on a link, applying the faults of this stage (first attempt only). In lockstep
/// a link delay is in the stamp (ticks; `link_delay` is then in ticks); in async it is time
/// (milliseconds). Every injected fault is reported.
template <class Self, class Handle, class Message>
void emit(Self* self, stage_core& c, const Handle& to, Message msg, int64_t link_delay) {
  if (!c.faults_on()) {
    self->send(to, std::move(msg));
    return;
  }
  const bool marker = msg.s.micro_batch < 0;
  bool burst = false;
  if constexpr (std::is_same_v<Message, forward_data>) burst = !marker && in_drop_burst(c);
  if (burst || (!marker && chance(c, c.faults.drop))) {
    report_fault(self, c, fault_kind::drop);
    return;
  }
  const int copies = !marker && chance(c, c.faults.duplicate) ? 2 : 1;
  if (copies == 2) report_fault(self, c, fault_kind::duplicate);
  if (c.lockstep() && !marker && link_delay > 0) report_fault(self, c, fault_kind::delay);  // in the stamp
  int64_t delay_ms = c.lockstep() ? 0 : link_delay;
  if (!c.lockstep() && c.faults.jitter_ms > 0)
    delay_ms += std::uniform_int_distribution<int64_t>(0, c.faults.jitter_ms)(c.fault_rng);
  if (!c.lockstep() && !marker && chance(c, c.faults.reorder)) {
    delay_ms += 1 + std::uniform_int_distribution<int64_t>(0, 19)(c.fault_rng);  // later messages overtake it
    report_fault(self, c, fault_kind::reorder);
  }
  for (int i = 0; i < copies; ++i) {
    if (delay_ms > 0) {
      report_fault(self, c, fault_kind::delay);
      self->delayed_send(to, std::chrono::milliseconds(delay_ms), msg);
    } else {
      self->send(to, msg);
    }
  }
}

}  // namespace petra::detail
