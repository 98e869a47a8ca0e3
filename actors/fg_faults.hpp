// Faults under forward gradients (docs/design.md §6), private to actors/: the derivatives that come back
// to a stage are the loss actor's messages, and the loss actor is no stage, so their faults are drawn
// where they arrive, with the receiving stage's faults.drop and faults.duplicate and the delay of the
// backward link into it (faults.backward_delay[j]: ticks in lockstep, milliseconds in async). A
// draw is a function of (faults.seed, stage, micro-batch): it does not depend on when a message
// arrives, so a lockstep run injects the same faults every time. Also which stage hands the loader
// its credits back (faults.slow is the stage work's slow-down, as for every stage).
#pragma once

#include "actors/link_faults.hpp"
#include "training/faults.hpp"

namespace petra::detail {

/// How many copies of micro-batch `id`'s derivatives reach stage c: 0 (lost), 1, or 2 (doubled);
/// the first attempt of a phase only; every injected fault is reported.
template <class Self>
int derivatives_copies(Self* self, stage_core& c, int64_t id) {
  if (!c.faults_on()) return 1;
  const int32_t j = c.ctx.index;
  if (c.faults.drop > 0 && fault_draw(c.faults.seed, j, id, 1) < c.faults.drop) {
    report_fault(self, c, fault_kind::drop);
    return 0;
  }
  if (c.faults.duplicate > 0 && fault_draw(c.faults.seed, j, id, 2) < c.faults.duplicate) {
    report_fault(self, c, fault_kind::duplicate);
    return 2;
  }
  return 1;
}

/// The injected delay of the derivatives coming back to stage c (0 past the first attempt).
inline int64_t derivatives_delay(const stage_core& c) {
  return c.faults_on() ? c.faults.in_backward_delay : 0;
}

/// Async: a derivatives message the stage sent itself to wait out its delay (it is the sender).
inline bool delayed_here(const stage_core& c, const derivatives_data& in) {
  return in.s.sender == c.ctx.index;
}

/// Whether this stage hands the loader a credit back when it ends a tick (lockstep) or a
/// micro-batch (async). With a global target stage 1 does, after the backward that the loss's
/// derivatives allow; with a local target nothing comes back from downstream to hold stage 1,
/// so the last stage does: otherwise stage 1 would run as far ahead of a slower stage as the
/// data go, the messages piling up in that stage's mailbox (and its memory) without bound.
inline bool returns_credits(const stage_core& c) {
  if (!c.ctx.fg) return c.is_first();
  return c.ctx.fg->local_target() ? c.is_last() : c.is_first();
}

}  // namespace petra::detail
