// A stage actor's side of a live migration (private to actors/): at a drained point it checks that
// it holds nothing of a phase (queued messages, a pending cut, an output awaiting the loss, guesses
// awaiting derivatives) and gives its whole state as a cut's part; the new actor takes it.
#pragma once

#include "actors/stage_async.hpp"
#include "actors/stage_lockstep.hpp"

namespace petra::detail {

/// Drained: the stage's state as a cut's part (weights, momentum, BN buffers, optimizer steps, what
/// it keeps between phases, and with forward gradients its auxiliary head). Throws std::logic_error
/// naming what it still holds when the pipeline is not drained there.
cut_part migration_part(lockstep_state& st);
/// Async: the same, marked as an async part whose queues are empty (what the new actor's protocol
/// restores from).
cut_part migration_part(async_state& st);

}  // namespace petra::detail
