// The async protocol's snapshots (Chandy–Lamport markers), private to actors/.
#pragma once

#include <optional>

#include "actors/stage_async.hpp"

namespace petra::detail {

/// In async every stamp carries tick −1: a message with a tick and nothing else is a cut's marker.
bool is_marker(const forward_data& f);
bool is_marker(const backward_data& b);

/// The marker of the cut before tick t came on the forward link: the stage's state, the first
/// `queued_before` forwards of its queue (those that came before the marker), the backwards it
/// holds and the output awaiting the loss make its part; the marker goes on along both links (to
/// the loss actor at the last stage), and the backward link is recorded until it comes back on it.
void take_cut(async_self self, int64_t t, std::size_t queued_before);
/// Whether the stage can take its part of a cut now (a backprop stage waits for the backward
/// that ends its live tape: the marker then waits in its forward queue, in order).
bool can_take_cut(const async_state& st);
/// The next stage's marker of the cut before `tick` came back: that link's recording ends.
void on_backward_marker(async_self self, int64_t tick);
/// A backward message arrived: a copy into every part still recording the backward link.
void record_backward(async_self self, backward_data& in);
/// The loss actor's answer arrived (last stage): into the part that awaited it.
void record_loss_answer(async_self self, loss_data& in);
/// Whole parts to the coordinator, in marker order; then the epoch reports held behind them.
void maybe_send_cut(async_self self);

/// A phase resuming from a cut: the stage's counts and queues from its part (restored before the
/// plan by resume_from); the loss actor's recorded answer, when the part awaited one, to run.
std::optional<loss_data> restore_queues(async_self self, const phase_plan& plan);

}  // namespace petra::detail
