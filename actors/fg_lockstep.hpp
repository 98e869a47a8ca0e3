// Forward gradients (training.method forward_gradient) in the stage actors, private to actors/;
// lockstep here, async in actors/fg_async.cpp: a stage sends forward its activation, the micro-batch's labels
// and the tangents it carries; the only message upstream is the loss actor's vector of directional
// derivatives, one per stage and micro-batch. Tick t of stage j runs when its forward input for t is there
// and, when the schedule brings them (its guess went out J − j ticks before), its derivatives for t.
#pragma once

#include <caf/detail/serialized_size.hpp>

#include "actors/stage_async.hpp"
#include "actors/stage_lockstep.hpp"

namespace petra::detail {

/// Runs the stage's tick c.phase.tick if its inputs are there: an evaluation batch first, then the forward
/// (the last stage's tick goes on when the loss answers), then the backward of the estimate due.
/// False when it must wait.
bool fg_run_tick(lockstep_self self);
/// Whether tick c.phase.tick waits for derivatives that have not come (status_of's waiting_backward).
bool fg_waiting_derivatives(const lockstep_state& st);

/// A stage's derivatives: counted (messages and serialized bytes from downstream), kept for their tick.
void on_derivatives(lockstep_self self, derivatives_data in);
/// Async (actors/fg_async.cpp): one unit of work, a waiting backward (in the stage's FIFO order)
/// before the next forward; false when idle or waiting for the loss.
bool fg_run_step(async_self self);
/// Async: a stage's derivatives, counted, kept by micro-batch.
void on_derivatives(async_self self, derivatives_data in);

/// Counts one message that came from downstream (stage_report::upstream_messages and _bytes).
template <class Self, class Message>
void count_upstream(Self* self, stage_core& c, const Message& in) {
  c.work.record.from_downstream(static_cast<int64_t>(caf::detail::serialized_size(self->system(), in)));
}

}  // namespace petra::detail
